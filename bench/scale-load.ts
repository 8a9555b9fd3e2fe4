/**
 * bench:scale's load: a kafkajs producer writing `rate` records/s round-robin over the input's
 * partitions, in a process of its own. In the orchestrator's process it shared instance A's event
 * loop, which the bench measures: when the broker fell behind, one send carried up to four ticks'
 * worth of records (8,000 at the default rate, over all 1000 partitions) and kafkajs built that
 * request in one stretch of 180–230 ms (CPU profile of a run, docs/engine.md), counted as a pause
 * of A's tasks. It reports each acknowledged end offset to the orchestrator, which maps the times
 * onto its own clock as it does the baseline's.
 */
import { performance } from 'node:perf_hooks';
import type { FromLoad, LoadConfig, ToLoad } from './scale-shared.js';

const config = JSON.parse(process.argv[2] ?? '{}') as LoadConfig;
const send = (message: FromLoad): void => {
  if (process.connected) process.send?.(message);
};

await import('../src/kafka/kafkajs-patches.js');
const { Kafka, logLevel } = (await import('kafkajs')).default;
const producer = new Kafka({ clientId: 'bench-scale-load', brokers: config.brokers, logLevel: logLevel.NOTHING })
  .producer({ allowAutoTopicCreation: false });

let sent = 0;
let acked = 0;
let failed = 0;
/** Ticks that found 4 sends in flight (the rate catches up on the next tick). */
let busyTicks = 0;
let firstError: string | null = null;
let next = 0;
let serial = 0;
let inFlight = 0;
let started = 0;

function tick(): void {
  const due = Math.min(4 * config.rate, Math.floor((config.rate * (performance.now() - started)) / 1000) - sent);
  if (due <= 0) return;
  if (inFlight >= 4) {
    busyTicks += 1;
    return;
  }
  const counts = new Map<number, number>();
  const messages: Array<{ partition: number; key: string; value: string }> = new Array(due);
  for (let i = 0; i < due; i += 1) {
    const partition = next % config.partitions;
    next += 1;
    serial += 1;
    counts.set(partition, (counts.get(partition) ?? 0) + 1);
    messages[i] = { partition, key: `p${partition}-k${serial % 16}`, value: JSON.stringify({ p: partition, s: serial, t: Date.now() }) };
  }
  sent += due;
  inFlight += 1;
  producer.send({ topic: config.topic, messages, acks: -1 }).then((metadata) => {
    const at = performance.timeOrigin + performance.now();
    const ends: Array<[number, number]> = [];
    let records = 0;
    for (const m of metadata) {
      const n = counts.get(m.partition) ?? 0;
      records += n;
      ends.push([m.partition, Number(m.baseOffset) + n]);
    }
    acked += records;
    send({ t: 'acked', at, ends, records });
  }, (error: unknown) => {
    failed += due;
    firstError ??= String(error);
  }).finally(() => { inFlight -= 1; });
}

try {
  await producer.connect();
  started = performance.now();
  const timer = setInterval(tick, config.tickMs);
  send({ t: 'started', at: performance.timeOrigin + started });
  let leaving = false;
  const leave = async (): Promise<void> => {
    if (leaving) return;
    leaving = true;
    clearInterval(timer);
    for (const limitAt = Date.now() + 5_000; inFlight > 0 && Date.now() < limitAt;) await new Promise((resolve) => setTimeout(resolve, 20));
    send({ t: 'stopped', sent, acked, failed, busyTicks, firstError });
    await producer.disconnect().catch(() => undefined);
    process.exit(0);
  };
  process.on('message', (message: ToLoad) => {
    if (message.t === 'stop') void leave();
  });
  process.on('disconnect', () => void leave());
  process.on('SIGTERM', () => void leave());
} catch (error) {
  send({ t: 'failed', error: String(error) });
  process.exit(1);
}
