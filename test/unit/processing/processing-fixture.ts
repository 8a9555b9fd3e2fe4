/**
 * Shared setup of the processing unit tests: the count topology, fake brokers with topics,
 * harnesses closed after each test, and polling for a condition.
 */
import { afterEach } from 'vitest';
import { StreamsBuilder } from '../../../src/processing/stream-builder.js';
import { TopologyBuilder, type ProcessorContext, type StreamRecord, type Topology } from '../../../src/processing/topology.js';
import { serdes } from '../../../src/store/serdes.js';
import { FakeBroker } from './fake-kafka.js';
import { startHarness, type Harness, type HarnessOptions } from './manager-harness.js';

/** Counts the records of `in` per key into the store `counts` and forwards each count to `out`. */
export function countTopology(): Topology {
  const b = new StreamsBuilder();
  b.stream('in', { key: serdes.string, value: serdes.string }).groupByKey().count({ store: 'counts', value: serdes.int32 }).toStream().to('out');
  return b.build();
}

/** countTopology, whose count changes go on downstream (at a cache flush) where key "bad" throws. */
export function refusingDownstreamTopology(): Topology {
  const b = new StreamsBuilder();
  b.stream('in', { key: serdes.string, value: serdes.string }).groupByKey().count({ store: 'counts', value: serdes.int32 }).toStream()
    .mapValues((value, key) => {
      if (key === 'bad') throw new Error('downstream refuses "bad"');
      return value;
    }, serdes.int32)
    .to('out');
  return b.build();
}

/**
 * Processor API: source `src` on topic `in` (string keys and values), a processor `count` that
 * counts each record's key in store `counts` (int32 values), then calls `then` with the record.
 */
export function countingProcessorTopology(then: (record: StreamRecord<string, string>, ctx: ProcessorContext) => void = () => undefined): Topology {
  const b = new TopologyBuilder();
  b.addSource('src', 'in', serdes.string, serdes.string);
  b.addStore('counts', serdes.string, serdes.int32);
  b.addProcessor<string, string>('count', (record, ctx) => {
    const store = ctx.store<string, number>('counts');
    store.put(record.key, (store.get(record.key) ?? 0) + 1);
    then(record, ctx);
  }, ['src'], ['counts']);
  return b.build();
}

/** A fake broker with each of `topics`, of `partitions` partitions. */
export function brokerWithTopics(topics: readonly string[], partitions = 1): FakeBroker {
  const broker = new FakeBroker();
  for (const topic of topics) broker.createTopic(topic, partitions);
  return broker;
}

import { waitFor as waitForCondition } from '../../support/wait-for.js';

/** Polls `predicate` every `pollMs` until it holds; throws after `timeoutMs` (unit-test defaults). */
export function waitFor(predicate: () => boolean, timeoutMs = 5000, pollMs = 10): Promise<void> {
  return waitForCondition(predicate, timeoutMs, pollMs);
}

export interface InputTaskOptions extends Omit<HarnessOptions, 'topology' | 'partitions' | 'broker'> {
  /** Default: countTopology(). */
  readonly topology?: Topology;
  /** Topics of the fresh broker, one partition each. Default: `in` and `out`. */
  readonly topics?: readonly string[];
}

export interface Harnesses {
  /** startHarness, with the harness closed after the test. */
  start(options: HarnessOptions): Promise<Harness>;
  /**
   * On a fresh broker with `topics` of one partition each: starts a harness (closed after the
   * test), assigns partition 0 of `in` and waits until its task is open.
   */
  startOnInput(options?: InputTaskOptions): Promise<Harness>;
}

/** Registers an afterEach that closes (manager, then engine) every harness started through the result. */
export function harnessesClosedAfterEach(): Harnesses {
  const started: Harness[] = [];
  afterEach(async () => {
    for (const h of started.splice(0)) {
      await h.manager.closeAll();
      await h.engine.close();
    }
  });
  const start = async (options: HarnessOptions): Promise<Harness> => {
    const h = await startHarness(options);
    started.push(h);
    return h;
  };
  return {
    start,
    startOnInput: async ({ topology = countTopology(), topics = ['in', 'out'], ...rest } = {}) => {
      const h = await start({ ...rest, topology, partitions: 1, broker: brokerWithTopics(topics) });
      h.ports.consumer.assign([{ topic: 'in', partition: 0 }]);
      await h.manager.control.idle();
      return h;
    },
  };
}
