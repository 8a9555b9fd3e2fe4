/** A TaskManager on fake ports and the in-memory store engine, driven step by step by a test. */
import { createInMemoryStoreEngine, createInMemoryDatabase, type InMemoryDatabase } from '../../../src/store/index.js';
import { serdes } from '../../../src/store/serdes.js';
import type { StoreEngine } from '../../../src/store/types.js';
import { parseProcessingOptions, type ProcessingOptionsInput } from '../../../src/processing/processing-options.js';
import type { RestoreProgress } from '../../../src/processing/restore-task-stores.js';
import type { CommitStep } from '../../../src/processing/stream-task.js';
import { TaskManager, type ProcessingPacer, type TaskManagerLogger } from '../../../src/processing/task-manager.js';
import type { Topology } from '../../../src/processing/topology.js';
import { FakeBroker, fakePorts, type FakeFailures } from './fake-kafka.js';

export const silentLogger = { warn: () => undefined, info: () => undefined, error: () => undefined, debug: () => undefined };

export interface Harness {
  readonly broker: FakeBroker;
  readonly manager: TaskManager;
  readonly engine: StoreEngine;
  readonly ports: ReturnType<typeof fakePorts>;
  readonly steps: string[];
  /** Records per completed commit. */
  readonly commits: number[];
  readonly fatal: unknown[];
  readonly restores: RestoreProgress[];
  readonly failures: FakeFailures;
  /** Delivers and processes until nothing is buffered. */
  pump(): Promise<void>;
  commitAll(): Promise<void>;
  counts(store: string, partition: number, readCommitted?: boolean): Promise<Map<string, number>>;
}

export interface HarnessOptions {
  readonly topology: Topology;
  readonly partitions: number;
  readonly options?: Partial<ProcessingOptionsInput>;
  readonly broker?: FakeBroker;
  readonly database?: InMemoryDatabase;
  readonly onCommitStep?: (step: CommitStep, taskId: string, harness: Harness) => void;
  readonly uncommittedMaxBytes?: number;
  /** The record cache shared by the tasks (default 0: every write flushes at once). */
  readonly cacheMaxBytes?: number;
  /** Exactly-once v2: one transactional producer for the instance (FakeStreamProducer). */
  readonly eosV2?: boolean;
  /** Default: silentLogger. */
  readonly logger?: TaskManagerLogger;
  /** Paces the processing loop (default: none, slices of processingSliceMs). */
  readonly pacer?: ProcessingPacer;
  /** Partition counts of internal repartition topics, whose sinks then write packs (record-pack.ts). */
  readonly repartitionPartitions?: ReadonlyMap<string, number>;
}

export async function startHarness(o: HarnessOptions): Promise<Harness> {
  const broker = o.broker ?? new FakeBroker();
  const failures: FakeFailures = { send: false, commit: false };
  const ports = fakePorts(broker, 'app', failures, o.eosV2 === true);
  const engine = createInMemoryStoreEngine({
    database: o.database ?? createInMemoryDatabase(), cacheMaxBytes: o.cacheMaxBytes ?? 0,
    ...(o.uncommittedMaxBytes !== undefined ? { uncommittedMaxBytes: o.uncommittedMaxBytes } : {}),
  });
  const steps: string[] = [];
  const commits: number[] = [];
  const fatal: unknown[] = [];
  const restores: RestoreProgress[] = [];
  const options = parseProcessingOptions({ applicationId: 'app', commitIntervalMs: 3_600_000, ...o.options });
  for (const sub of o.topology.subTopologies) for (const s of sub.stores) broker.createTopic(`app-${s}-changelog`, o.partitions);
  if (options.deserializationErrors === 'dead-letter' || options.processingErrors === 'dead-letter') broker.createTopic(options.deadLetterTopic, 1);
  // eslint-disable-next-line prefer-const -- assigned after the manager that references it
  let harness: Harness;
  const manager = new TaskManager({
    topology: o.topology,
    options,
    ports,
    engine,
    logger: o.logger ?? silentLogger,
    ...(o.pacer === undefined ? {} : { pacer: o.pacer }),
    ...(o.repartitionPartitions === undefined ? {} : { repartitionPartitions: o.repartitionPartitions }),
    events: {
      onCommitStep: (step, taskId) => {
        steps.push(`${taskId}:${step}`);
        o.onCommitStep?.(step, taskId, harness);
      },
      onRestoreProgress: (p) => restores.push(p),
      onCommit: (_taskId, _ms, records) => commits.push(records),
      onInstanceCommit: (outcome) => commits.push(outcome.records),
      onFatal: (error) => fatal.push(error),
    },
  });
  manager.start();
  await ports.consumer.run(manager);
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 10_000; i += 1) {
      await new Promise((r) => setImmediate(r));
      if (manager.localTasks().every((t) => t.buffered() === 0 || !t.canProcess())) return;
    }
  };
  harness = {
    broker, manager, engine, ports, steps, commits, fatal, restores, failures,
    pump: async () => {
      for (let i = 0; i < 100; i += 1) {
        const n = ports.consumer.deliver();
        await settle();
        if (n === 0) return;
      }
    },
    commitAll: () => manager.commitNow(),
    counts: async (store, partition, readCommitted = true) => {
      const counts = new Map<string, number>();
      const local = manager.localTasks().find((t) => t.partition === partition && t.stores?.storeNames().includes(store));
      if (local?.stores == null) return counts;
      const view = local.stores.store(store).view({ readCommitted });
      for await (const { key, value } of view.range()) counts.set(serdes.string.deserialize(key), serdes.int32.deserialize(value));
      await view.close();
      return counts;
    },
  };
  return harness;
}

export function send(broker: FakeBroker, topic: string, partition: number, key: string | Buffer, value: string | Buffer): void {
  broker.append(topic, partition, Buffer.isBuffer(key) ? key : Buffer.from(key), Buffer.isBuffer(value) ? value : Buffer.from(value), null);
}
