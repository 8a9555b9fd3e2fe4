/**
 * `npm run bench:store`: the iqgate store stack (LevelDB engine) and raw `level` doing the
 * same work in one run, one line per figure plus the ratio stack/raw, written to
 * bench/results/store.json as [{ name, unit, value }].
 *
 * Workload: 100k keys of 16 bytes, 100-byte values, one store partition, a flush listener
 * registered as the runtime always has one. Raw `level` uses the same fixed-width prefixed
 * keys, prebuilt, and the same primitives the stack uses (chained batches, getSync on a
 * snapshot with pre-normalised options, nextv iterators), so the ratio is the stack's own
 * overhead. Stack and raw run in alternating rounds and each figure is the median over the
 * rounds, so load from other processes on a shared machine hits both sides alike.
 * Targets (issue 3): commit ≥ 0.8 × raw batch writes, committed reads ≥ 0.8 × raw reads,
 * uncommitted puts ≥ 1,000,000/s; (issue 25) uncommitted puts ≥ 0.5 × raw batch puts.
 */
import { Figures } from './figures.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { openLevelStoreEngine, type KeyValueStorePartition, type ReadView, type TaskStores } from '../src/store/index.js';
import { Buffer } from 'node:buffer';

const KEYS = 100_000;
const VALUE_BYTES = 100;
const COMMIT_ENTRIES = 10_000;
const GETS_PER_ROUND = 50_000;
const SHORT_RANGES_PER_ROUND = 300;
const ROUNDS = 9;

const figures = new Figures((f) => `${f.name.padEnd(52)} ${f.value.toLocaleString('en-US', { maximumFractionDigits: 2 }).padStart(14)} ${f.unit}`);
const record = figures.report.bind(figures);

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * Seconds taken by fn; fn returns how many operations it did. One event-loop turn first: V8
 * runs the scavenges that synchronous work before made due as tasks at the next turn, which
 * would otherwise land inside the timed section (the stack's commit would pay for the
 * garbage of the puts before it). The processing loop yields between batches anyway.
 */
async function time(fn: () => Promise<number> | number): Promise<{ count: number; seconds: number }> {
  await new Promise((resolve) => setImmediate(resolve));
  const start = process.hrtime.bigint();
  const count = await fn();
  return { count, seconds: Number(process.hrtime.bigint() - start) / 1e9 };
}

/**
 * Alternating rounds of stack and raw work. Each side reports its own operation count and
 * seconds (a side may time only part of its round, e.g. only the commit); the figures are
 * the medians of the per-round rates and of the per-round ratios.
 */
async function compare(
  name: string,
  unit: string,
  rounds: number,
  stack: (round: number) => Promise<{ count: number; seconds: number }>,
  raw: (round: number) => Promise<{ count: number; seconds: number }>,
  target?: number,
): Promise<void> {
  const stackRates: number[] = [];
  const rawRates: number[] = [];
  const ratios: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const s = await stack(round);
    const r = await raw(round);
    stackRates.push(s.count / s.seconds);
    rawRates.push(r.count / r.seconds);
    ratios.push(s.count / s.seconds / (r.count / r.seconds));
  }
  record(`${name} (stack)`, unit, median(stackRates));
  record(`${name} (raw level)`, unit, median(rawRates));
  record(`${name} ratio stack/raw${target === undefined ? '' : ` (target ≥ ${target})`}`, 'ratio', median(ratios));
}

function key(i: number): Buffer {
  const k = Buffer.alloc(16);
  k.write(`k${String(i).padStart(15, '0')}`, 'latin1');
  return k;
}

const keys = Array.from({ length: KEYS }, (_, i) => key(i));
const values = Array.from({ length: KEYS }, (_, i) => Buffer.alloc(VALUE_BYTES, i % 251));
const prefix = Buffer.from([0, 1, 0, 0, 0, 0, 0, 0, 0, 0]); // the stack's layout for store id 1, partition 0
const prefixEnd = Buffer.from([0, 1, 0, 0, 0, 0, 0, 0, 0, 1]);
const rawKeys = keys.map((k) => Buffer.concat([prefix, k]));
const randomIndexes = Array.from({ length: GETS_PER_ROUND }, () => Math.floor(Math.random() * KEYS));
const rangeStarts = Array.from({ length: SHORT_RANGES_PER_ROUND }, () => Math.floor(Math.random() * (KEYS - 100)));
const source = { topic: 'bench-input', partition: 0, offset: 0 };

async function main(): Promise<void> {
  const started = Date.now();
  const stackDir = await mkdtemp(join(tmpdir(), 'iqgate-bench-stack-'));
  const rawDir = await mkdtemp(join(tmpdir(), 'iqgate-bench-raw-'));
  const engine = await openLevelStoreEngine({ directory: stackDir });
  const raw = new Level<Buffer, Buffer>(rawDir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await raw.open();
  const views: ReadView[] = [];
  try {
    const task: TaskStores = await engine.openTask('bench-0', [{ name: 'bench', partition: 0 }]);
    let flushed = 0;
    task.onFlush((changes) => {
      flushed += changes.length;
    });
    const store: KeyValueStorePartition = task.store('bench');
    const put = (i: number, value = values[i]!): void => {
      source.offset++;
      store.put(keys[i]!, value, source);
    };

    // 1. Uncommitted puts: into the record cache (10 MiB; evictions flush into the write
    //    batch). Raw counterpart: puts into a chained batch that is never written.
    await compare(
      'uncommitted puts',
      'puts/s',
      ROUNDS,
      () => {
        task.abort(); // each round starts from an empty cache and write batch
        return time(() => {
          for (let i = 0; i < KEYS; i++) put(i);
          return KEYS;
        });
      },
      () =>
        time(async () => {
          const batch = raw.batch();
          for (let i = 0; i < KEYS; i++) batch.put(rawKeys[i]!, values[i]!);
          await batch.close();
          return KEYS;
        }),
      0.5,
    );
    task.abort();
    record('uncommitted puts target', 'puts/s', 1_000_000);

    // 2. Commit of COMMIT_ENTRIES entries (cache flush, one atomic batch with the metadata),
    //    timed from commit() to its resolution. Raw: a chained batch of the same puts.
    let commitCursor = 0;
    await compare(
      'commit',
      'entries/s',
      (2 * KEYS) / COMMIT_ENTRIES,
      async () => {
        const start = commitCursor % KEYS;
        for (let i = start; i < start + COMMIT_ENTRIES; i++) put(i);
        return time(async () => {
          await task.commit({ bench: source.offset });
          return COMMIT_ENTRIES;
        });
      },
      async () => {
        const start = commitCursor % KEYS;
        commitCursor += COMMIT_ENTRIES;
        return time(async () => {
          const batch = raw.batch();
          for (let i = start; i < start + COMMIT_ENTRIES; i++) batch.put(rawKeys[i]!, values[i]!);
          await batch.write();
          return COMMIT_ENTRIES;
        });
      },
      0.8,
    );

    // 3. Committed gets through a committed view; raw: getSync on a snapshot.
    const rawSnapshot = raw.snapshot();
    const rawOptions = { snapshot: rawSnapshot, keyEncoding: 'buffer', valueEncoding: 'buffer' } as const;
    const rawGets = () =>
      time(async () => {
        for (const i of randomIndexes) await Promise.resolve(raw.getSync(rawKeys[i]!, rawOptions));
        return GETS_PER_ROUND;
      });
    const viewGets = (view: ReadView) => () =>
      time(async () => {
        for (const i of randomIndexes) await view.get(keys[i]!);
        return GETS_PER_ROUND;
      });
    const committedView = store.view({ readCommitted: true });
    views.push(committedView);
    await compare('committed gets', 'gets/s', ROUNDS, viewGets(committedView), rawGets, 0.8);

    // 4. Uncommitted gets: 10% of the keys overwritten, half of those in the write batch and
    //    half in the record cache, the rest committed.
    for (let i = 0; i < KEYS; i += 20) put(i, values[(i + 1) % KEYS]);
    task.flush();
    for (let i = 10; i < KEYS; i += 20) put(i, values[(i + 1) % KEYS]);
    const uncommittedView = store.view({ readCommitted: false });
    views.push(uncommittedView);
    await compare('uncommitted gets', 'gets/s', ROUNDS, viewGets(uncommittedView), rawGets);
    await compare(
      'processing-path gets (sync, no snapshot)',
      'gets/s',
      ROUNDS,
      () =>
        time(() => {
          for (const i of randomIndexes) store.get(keys[i]!);
          return GETS_PER_ROUND;
        }),
      () =>
        time(() => {
          for (const i of randomIndexes) raw.getSync(rawKeys[i]!);
          return GETS_PER_ROUND;
        }),
    );

    // 5. Ranges: full scans of the partition, and ranges of 100 entries from random keys.
    const rawRange = async (gte: Buffer, limit: number): Promise<number> => {
      const iterator = raw.iterator({ gte, lt: prefixEnd, limit, ...rawOptions, highWaterMarkBytes: 128 * 1024 });
      let n = 0;
      try {
        const size = limit < 0 ? 1000 : Math.min(limit, 1000);
        // The same output as the stack's: entries with the keyspace prefix stripped.
        for (let chunk = await iterator.nextv(size); chunk.length > 0; chunk = await iterator.nextv(size)) {
          for (const [key, value] of chunk) {
            const entry = { key: key.subarray(prefix.length), value };
            n += entry.key.length > 0 ? 1 : 0;
          }
        }
      } finally {
        await iterator.close();
      }
      return n;
    };
    const viewRange = async (view: ReadView, from: Buffer | undefined, limit: number | undefined): Promise<number> => {
      let n = 0;
      const options = { ...(from === undefined ? {} : { from }), ...(limit === undefined ? {} : { limit }) };
      for await (const entry of view.range(options)) n += entry.key.length > 0 ? 1 : 0;
      return n;
    };
    const rawScan = () => time(() => rawRange(prefix, -1));
    const rawShort = () =>
      time(async () => {
        let n = 0;
        for (const i of rangeStarts) n += await rawRange(rawKeys[i]!, 100);
        return n;
      });
    for (const [label, view] of [
      ['committed', committedView],
      ['uncommitted', uncommittedView],
    ] as const) {
      await compare(`${label} full-scan range`, 'entries/s', 5, () => time(() => viewRange(view, undefined, undefined)), rawScan);
      await compare(
        `${label} ranges of 100`,
        'entries/s',
        ROUNDS,
        () =>
          time(async () => {
            let n = 0;
            for (const i of rangeStarts) n += await viewRange(view, keys[i]!, 100);
            return n;
          }),
        rawShort,
      );
    }
    await rawSnapshot.close();
    record('entries handed to the flush listener', 'entries', flushed);
    record('bench wall time', 's', (Date.now() - started) / 1000);
  } finally {
    await Promise.allSettled(views.map((view) => view.close()));
    await engine.close();
    await raw.close();
    await Promise.all([rm(stackDir, { recursive: true, force: true }), rm(rawDir, { recursive: true, force: true })]);
  }
  await figures.write('store');
}

await main();
