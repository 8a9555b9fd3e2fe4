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
import { roundTripsExactly, stringSerde } from '../store/serdes.js';
import { toInternalKey } from '../store/sorted-map.js';
import type { FlushedChange, RecordSource, Serde, TaskStores } from '../store/types.js';
import type { InputRecord } from './ports.js';
import { entryOf } from './record-pack.js';
import type { ProcessorContext, SourceNode, StreamRecord, Topology, TopologyNode, TypedStore } from './topology.js';
import { Buffer } from 'node:buffer';

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

/** Runs one node for a record: built once per node (TaskNodeRunner.runOf), so the per-record path does no lookups by name. */
type NodeRun = (record: StreamRecord<unknown, unknown>) => void;

/** A source node of an input topic, with the run of its children. */
export interface SourceRun {
  readonly name: string;
  readonly node: SourceNode;
  readonly children: NodeRun;
}

const nothing: NodeRun = () => undefined;

export class TaskNodeRunner {
  private current: RecordSource = { topic: '', partition: 0, offset: 0 };
  private currentTimestamp = 0;
  /** The current input record's decoded key, its bytes and the serde that decoded them. */
  private sourceKey: unknown;
  private sourceKeyBytes: Buffer | null = null;
  private sourceKeySerde: Serde<unknown> | null = null;
  private readonly contexts = new Map<string, ProcessorContext>();
  private readonly runs = new Map<string, NodeRun>();
  private readonly typedStores = new Map<string, TypedStore<unknown, unknown>>();
  /** Bumped by forgetStores(): a context's remembered typed store is from an older attachment. */
  private storesGeneration = 0;

  constructor(private readonly config: TaskNodeRunnerConfig) {}

  /** Forgets the typed stores built so far: the task's stores were (re)attached. */
  forgetStores(): void {
    this.typedStores.clear();
    this.storesGeneration += 1;
  }

  node(name: string): TopologyNode {
    const node = this.config.topology.nodes.get(name);
    if (node === undefined) throw new TypeError(`unknown node ${name}`);
    return node;
  }

  /** The source nodes named `names` (an input topic's), each with the run of its children (the caller keeps them). */
  sources(names: readonly string[]): readonly SourceRun[] {
    return names.flatMap((name) => {
      const node = this.node(name);
      return node.kind === 'source' ? [{ name, node, children: this.childrenRun(name) }] : [];
    });
  }

  /**
   * Makes `record` the current input record and runs the children of its source node with the
   * key and value `keySerde` and the value serde decoded.
   */
  runSource(source: SourceRun, record: InputRecord, keySerde: Serde<unknown>, key: unknown, value: unknown): void {
    // `entry`: the record's index in a pack (record-pack.ts), so that an abort names one entry.
    const current: RecordSource & { readonly entry: number | undefined } = { topic: record.topic, partition: record.partition, offset: record.offset, entry: entryOf(record) };
    this.current = current;
    this.currentTimestamp = record.timestamp;
    this.sourceKey = key;
    this.sourceKeyBytes = record.key;
    this.sourceKeySerde = keySerde;
    source.children({ key, value, timestamp: record.timestamp, headers: record.headers });
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
      for (const subscriber of definition.changeSubscribers) this.runOf(subscriber)(record);
    } finally {
      this.current = saved;
    }
  }

  /** Runs node `name` for a record (a sink serializes it, a processor is called with its context). */
  private runOf(name: string): NodeRun {
    let run = this.runs.get(name);
    if (run !== undefined) return run;
    const node = this.node(name);
    if (node.kind === 'sink') {
      const { sink } = this.config;
      const topic = this.config.sinkTopics.get(name) ?? node.topic;
      const { keySerde, valueSerde } = node;
      run = (record) => sink(topic, record.key, record.value, keySerde, valueSerde, record.timestamp);
    } else if (node.kind === 'processor') {
      const context = this.contextFor(name);
      run = (record) => node.process(record, context);
    } else {
      run = nothing;
    }
    this.runs.set(name, run);
    return run;
  }

  /**
   * Runs every child of node `name`, in order. The children's runs are built at the first
   * record, not here: the Processor API does not forbid a cycle (a processor forwarding back to
   * an ancestor under some condition), and building them here would recurse through it.
   */
  private childrenRun(name: string): NodeRun {
    const children = this.config.topology.children.get(name) ?? [];
    if (children.length === 0) return nothing;
    let runs: NodeRun[] | null = null;
    return (record) => {
      runs ??= children.map((child) => this.runOf(child));
      for (const run of runs) run(record);
    };
  }

  private contextFor(nodeName: string): ProcessorContext {
    let context = this.contexts.get(nodeName);
    if (context !== undefined) return context;
    const node = this.node(nodeName);
    const allowed = new Set(node.kind === 'processor' ? node.stores : []);
    const children = this.config.topology.children.get(nodeName) ?? [];
    const forwardAll = this.childrenRun(nodeName);
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the context reads the runner's current record
    const runner = this;
    // The store asked for last, as long as the stores are not re-attached: a processor asks for
    // the same store on every record.
    let lastName: string | null = null;
    let lastStore: TypedStore<unknown, unknown> | null = null;
    let lastGeneration = -1;
    context = {
      store: <K, V>(storeName: string): TypedStore<K, V> => {
        if (storeName === lastName && lastGeneration === runner.storesGeneration && lastStore !== null) return lastStore as TypedStore<K, V>;
        if (!allowed.has(storeName)) throw new IqgateError('STORE_NOT_FOUND', `processor "${nodeName}" did not declare store "${storeName}"`);
        lastStore = runner.typedStore(storeName);
        lastName = storeName;
        lastGeneration = runner.storesGeneration;
        return lastStore as TypedStore<K, V>;
      },
      forward: <K, V>(record: StreamRecord<K, V>, child?: string): void => {
        if (child === undefined) {
          forwardAll(record as StreamRecord<unknown, unknown>);
          return;
        }
        if (!children.includes(child)) throw new TypeError(`"${child}" is not a child of "${nodeName}"`);
        runner.runOf(child)(record as StreamRecord<unknown, unknown>);
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
    const asciiString = serde === (stringSerde as Serde<unknown>);
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
      // The internal form is the bytes read as latin1: for a string the string serde wrote in
      // as many bytes as it has chars (all ASCII), that is the string itself — no native call.
      lastInternal = !primitive ? '' : asciiString && typeof key === 'string' && bytes.length === key.length ? key : toInternalKey(bytes);
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
