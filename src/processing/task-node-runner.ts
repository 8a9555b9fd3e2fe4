/**
 * Runs a task's topology nodes for the record at hand: a sink serializes the record into the
 * task's transaction output; a processor is called with its ProcessorContext — forward to its
 * children, typed access to the stores it declared, the input record's topic/partition/offset.
 * It holds the current input record, which stamps every store write with its source (the
 * Position a query is served at).
 *
 * Separate from StreamTask so that the task shows its lifecycle, error policies and commit
 * protocol, and what a processor sees is in one place. Contexts and typed stores are built once
 * per node and store and cached, since they are asked for on every record.
 */
import { IqgateError } from '../errors.js';
import { roundTripsExactly } from '../store/serdes.js';
import { toInternalKey } from '../store/sorted-map.js';
import type { FlushedChange, RecordSource, Serde, TaskStores } from '../store/types.js';
import type { InputRecord } from './ports.js';
import { entryOf } from './record-pack.js';
import type { ProcessorContext, StreamRecord, Topology, TopologyNode, TypedStore } from './topology.js';

export interface TaskNodeRunnerConfig {
  readonly taskId: string;
  readonly topology: Topology;
  /** Resolved topic of each sink node. */
  readonly sinkTopics: ReadonlyMap<string, string>;
  /** Takes the records of sink nodes, to serialize with their serdes (the task's transaction output). */
  readonly sink: <K, V>(topic: string, key: K | null | undefined, value: V | null | undefined, keySerde: Serde<K>, valueSerde: Serde<V>, timestamp: number) => void;
  /** The task's stores, null while none are attached. */
  readonly stores: () => TaskStores | null;
  /** A processor called abortTransaction() while `source` was the current input record. */
  readonly requestAbort: (source: RecordSource, reason: string) => void;
}

export class TaskNodeRunner {
  private current: RecordSource = { topic: '', partition: 0, offset: 0 };
  private currentTimestamp = 0;
  /** The current input record's decoded key, its bytes and the serde that decoded them. */
  private sourceKey: unknown;
  private sourceKeyBytes: Buffer | null = null;
  private sourceKeySerde: Serde<unknown> | null = null;
  private readonly contexts = new Map<string, ProcessorContext>();
  private readonly typedStores = new Map<string, TypedStore<unknown, unknown>>();

  constructor(private readonly config: TaskNodeRunnerConfig) {}

  /** Forgets the typed stores built so far: the task's stores were (re)attached. */
  forgetStores(): void {
    this.typedStores.clear();
  }

  node(name: string): TopologyNode {
    const node = this.config.topology.nodes.get(name);
    if (node === undefined) throw new TypeError(`unknown node ${name}`);
    return node;
  }

  /**
   * Makes `record` the current input record and runs the children of its source node with the
   * key and value `keySerde` and the value serde decoded.
   */
  runSource(sourceName: string, record: InputRecord, keySerde: Serde<unknown>, key: unknown, value: unknown): void {
    // `entry`: the record's index in a pack (record-pack.ts), so that an abort names one entry.
    const source: RecordSource & { readonly entry: number | undefined } = { topic: record.topic, partition: record.partition, offset: record.offset, entry: entryOf(record) };
    this.current = source;
    this.currentTimestamp = record.timestamp;
    this.sourceKey = key;
    this.sourceKeyBytes = record.key;
    this.sourceKeySerde = keySerde;
    const typed: StreamRecord<unknown, unknown> = { key, value, timestamp: record.timestamp, headers: record.headers };
    for (const child of this.config.topology.children.get(sourceName) ?? []) this.runNode(child, typed);
  }

  /**
   * Forwards a change leaving the record cache to its store's change subscribers, with the
   * change's source as the current record while they run, as Kafka Streams'
   * CachingKeyValueStore forwards on flush/evict.
   */
  forwardChange(change: FlushedChange): void {
    const definition = this.config.topology.stores.get(change.storeName);
    if (definition === undefined || definition.changeSubscribers.length === 0) return;
    const saved = this.current;
    try {
      this.current = change.source;
      const record: StreamRecord<unknown, unknown> = {
        key: definition.keySerde.deserialize(change.key),
        value: change.value === null ? null : definition.valueSerde.deserialize(change.value),
        timestamp: this.currentTimestamp,
      };
      for (const subscriber of definition.changeSubscribers) this.runNode(subscriber, record);
    } finally {
      this.current = saved;
    }
  }

  private runNode(name: string, record: StreamRecord<unknown, unknown>): void {
    const node = this.node(name);
    if (node.kind === 'sink') {
      this.config.sink(this.config.sinkTopics.get(name) ?? node.topic, record.key, record.value, node.keySerde, node.valueSerde, record.timestamp);
    } else if (node.kind === 'processor') {
      node.process(record, this.contextFor(node.name));
    }
  }

  private contextFor(nodeName: string): ProcessorContext {
    let context = this.contexts.get(nodeName);
    if (context !== undefined) return context;
    const node = this.node(nodeName);
    const allowed = new Set(node.kind === 'processor' ? node.stores : []);
    const children = this.config.topology.children.get(nodeName) ?? [];
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the context reads the runner's current record
    const runner = this;
    context = {
      store: <K, V>(storeName: string): TypedStore<K, V> => {
        if (!allowed.has(storeName)) throw new IqgateError('STORE_NOT_FOUND', `processor "${nodeName}" did not declare store "${storeName}"`);
        return runner.typedStore(storeName) as TypedStore<K, V>;
      },
      forward: <K, V>(record: StreamRecord<K, V>, child?: string): void => {
        if (child !== undefined) {
          if (!children.includes(child)) throw new TypeError(`"${child}" is not a child of "${nodeName}"`);
          runner.runNode(child, record);
        } else {
          for (const c of children) runner.runNode(c, record);
        }
      },
      abortTransaction: (reason: string): void => {
        if (typeof reason !== 'string') throw new TypeError('abortTransaction(reason): reason must be a string');
        runner.config.requestAbort(runner.current, reason);
      },
      get topic() { return runner.current.topic; },
      get partition() { return runner.current.partition; },
      get offset() { return runner.current.offset; },
    };
    this.contexts.set(nodeName, context);
    return context;
  }

  private typedStore(storeName: string): TypedStore<unknown, unknown> {
    let typed = this.typedStores.get(storeName);
    if (typed !== undefined) return typed;
    const definition = this.config.topology.stores.get(storeName);
    const stores = this.config.stores();
    if (definition === undefined || stores === null) throw new IqgateError('STORE_NOT_FOUND', `store "${storeName}" is not open in task ${this.config.taskId}`);
    const partition = stores.processingStore(storeName);
    const serde = definition.keySerde;
    const exact = roundTripsExactly(serde);
    // A read-modify-write (count, aggregate, reduce) serializes the same key twice in a row: the
    // last primitive key's bytes and internal form are kept for the next call. Never an object
    // key — a processor may change it in between. A primitive key that is the input record's own
    // (a groupBy's aggregate: the repartition record's key), read through the serde that decoded
    // it, is not serialized at all when that serde gives back exactly the bytes it decoded.
    let lastKey: unknown;
    let lastBytes: Buffer | null = null;
    let lastInternal = '';
    const resolve = (key: unknown): Buffer => {
      if (lastBytes !== null && Object.is(key, lastKey)) return lastBytes;
      const primitive = typeof key === 'string' || typeof key === 'number' || typeof key === 'bigint';
      const bytes = primitive && this.sourceKeyBytes !== null && serde === this.sourceKeySerde && exact && Object.is(key, this.sourceKey)
        ? this.sourceKeyBytes
        : serde.serialize(key);
      lastKey = primitive ? key : undefined;
      lastBytes = primitive ? bytes : null;
      lastInternal = primitive ? toInternalKey(bytes) : '';
      return bytes;
    };
    const internalOf = (bytes: Buffer): string | undefined => (bytes === lastBytes ? lastInternal : undefined);
    typed = {
      get: (key) => {
        const bytes = resolve(key);
        const value = partition.get(bytes, internalOf(bytes));
        return value === undefined ? undefined : definition.valueSerde.deserialize(value);
      },
      put: (key, value) => {
        const bytes = resolve(key);
        partition.put(bytes, definition.valueSerde.serialize(value), this.current, internalOf(bytes));
      },
      delete: (key) => {
        const bytes = resolve(key);
        partition.delete(bytes, this.current, internalOf(bytes));
      },
    };
    this.typedStores.set(storeName, typed);
    return typed;
  }
}
