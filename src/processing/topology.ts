/**
 * The processor topology (docs/architecture.md §4): sources → processors → sinks, plus store definitions.
 * This is the low-level API (Kafka Streams' `Topology.addSource/addProcessor/addSink/addStateStore`);
 * the DSL in stream-builder.ts compiles down to it.
 *
 * Nodes are split into sub-topologies (connected components, as Kafka Streams does): each
 * sub-topology has its own source topics and its own tasks, one per partition. A DSL `groupBy`
 * cuts the graph with a repartition topic, so a wordcount is two sub-topologies.
 */
import type { Serde } from '../store/types.js';
import { IqgateError } from '../errors.js';

/** A typed record flowing between nodes. */
export interface StreamRecord<K, V> {
  readonly key: K;
  readonly value: V;
  readonly timestamp: number;
  readonly headers?: Readonly<Record<string, string>>;
}

/** Typed access to one store partition from a processor (serdes applied). */
export interface TypedStore<K, V> {
  get(key: K): V | undefined;
  put(key: K, value: V): void;
  delete(key: K): void;
}

export interface ProcessorContext {
  /** The store must be listed in the processor's `stores`. */
  store<K, V>(name: string): TypedStore<K, V>;
  /** Sends a record to all children, or to the named child only. */
  forward<K, V>(record: StreamRecord<K, V>, child?: string): void;
  /**
   * Aborts the task's open transaction at its commit point: everything the task did since its
   * last commit (store writes, output records) is rolled back instead of committed, the other
   * input records of that transaction are processed again, in order, into the next one, and
   * the record being processed is dropped (consumed without effect). Until the commit point the
   * transaction's writes stay visible to uncommitted reads, as any uncommitted write is.
   * Deferring the abort to the commit point costs one rollback and replay per commit interval
   * however many records ask for it. Not an error: the processor may simply return (whatever
   * else it writes for this record is rolled back too). Logged with code TRANSACTION_ABORTED.
   * Under at-least-once, output records already sent ahead of the commit stay sent.
   */
  abortTransaction(reason: string): void;
  /** The input record being processed. */
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
}

export type ProcessorFn<K = unknown, V = unknown> = (record: StreamRecord<K, V>, context: ProcessorContext) => void;

export interface SourceNode {
  readonly kind: 'source';
  readonly name: string;
  readonly topic: string;
  readonly keySerde: Serde<unknown>;
  readonly valueSerde: Serde<unknown>;
  /** Internal repartition topic created by the runtime (`<appId>-<topic>`). */
  readonly internal: boolean;
}

export interface ProcessorNode {
  readonly kind: 'processor';
  readonly name: string;
  readonly process: ProcessorFn;
  readonly parents: readonly string[];
  readonly stores: readonly string[];
}

export interface SinkNode {
  readonly kind: 'sink';
  readonly name: string;
  readonly topic: string;
  readonly keySerde: Serde<unknown>;
  readonly valueSerde: Serde<unknown>;
  readonly parents: readonly string[];
  readonly internal: boolean;
}

export type TopologyNode = SourceNode | ProcessorNode | SinkNode;

export interface StoreDefinition {
  readonly name: string;
  readonly keySerde: Serde<unknown>;
  readonly valueSerde: Serde<unknown>;
  /**
   * Nodes that receive the store's changes (key, new value or null) when dirty entries leave
   * the record cache — Kafka Streams' KTable forwarding through CachingKeyValueStore's flush
   * listener, so repeated updates of a key between commits are forwarded once.
   */
  readonly changeSubscribers: readonly string[];
}

export interface SubTopology {
  readonly id: number;
  /** Source topics, sorted; all co-partitioned: partition p of each goes to task `<id>_<p>`. */
  readonly sourceTopics: readonly string[];
  readonly nodes: readonly string[];
  readonly stores: readonly string[];
}

/** A validated, immutable topology. Internal topic names are still relative (prefixed with the appId at runtime). */
export interface Topology {
  readonly nodes: ReadonlyMap<string, TopologyNode>;
  readonly stores: ReadonlyMap<string, StoreDefinition>;
  readonly subTopologies: readonly SubTopology[];
  /** Children of each node (processors and sinks), in insertion order. */
  readonly children: ReadonlyMap<string, readonly string[]>;
  describe(): string;
}

const NAME = /^[A-Za-z0-9._-]+$/;

export class TopologyBuilder {
  private readonly nodes = new Map<string, TopologyNode>();
  private readonly stores = new Map<string, { name: string; keySerde: Serde<unknown>; valueSerde: Serde<unknown>; changeSubscribers: string[] }>();
  private counter = 0;

  /** A unique node name with a readable prefix, as the DSL's `KSTREAM-MAP-0000000003`. */
  nextName(prefix: string): string {
    this.counter += 1;
    return `${prefix}-${String(this.counter).padStart(4, '0')}`;
  }

  addSource<K, V>(name: string, topic: string, keySerde: Serde<K>, valueSerde: Serde<V>, options: { internal?: boolean } = {}): this {
    this.checkNewName(name);
    checkName(topic, 'topic');
    this.nodes.set(name, { kind: 'source', name, topic, keySerde: keySerde as Serde<unknown>, valueSerde: valueSerde as Serde<unknown>, internal: options.internal ?? false });
    return this;
  }

  addProcessor<K, V>(name: string, process: ProcessorFn<K, V>, parents: readonly string[], stores: readonly string[] = []): this {
    this.checkNewName(name);
    this.nodes.set(name, { kind: 'processor', name, process: process as ProcessorFn, parents: [...parents], stores: [...stores] });
    return this;
  }

  addSink<K, V>(name: string, topic: string, keySerde: Serde<K>, valueSerde: Serde<V>, parents: readonly string[], options: { internal?: boolean } = {}): this {
    this.checkNewName(name);
    checkName(topic, 'topic');
    this.nodes.set(name, {
      kind: 'sink', name, topic, keySerde: keySerde as Serde<unknown>, valueSerde: valueSerde as Serde<unknown>, parents: [...parents], internal: options.internal ?? false,
    });
    return this;
  }

  addStore<K, V>(name: string, keySerde: Serde<K>, valueSerde: Serde<V>): this {
    checkName(name, 'store');
    if (this.stores.has(name)) throw new IqgateError('INVALID_CONFIG', `store "${name}" is defined twice`);
    this.stores.set(name, { name, keySerde: keySerde as Serde<unknown>, valueSerde: valueSerde as Serde<unknown>, changeSubscribers: [] });
    return this;
  }

  /** Feeds the store's flushed changes to `nodeName` (a processor or sink added before or after). */
  connectStoreChanges(storeName: string, nodeName: string): this {
    const store = this.stores.get(storeName);
    if (store === undefined) throw new IqgateError('STORE_NOT_FOUND', `store "${storeName}" is not defined`);
    store.changeSubscribers.push(nodeName);
    return this;
  }

  build(): Topology {
    const children = new Map<string, string[]>();
    for (const name of this.nodes.keys()) children.set(name, []);
    const storeOf = new Map<string, string>(); // pseudo-parent "store:<name>" → store name
    for (const store of this.stores.values()) storeOf.set(`store:${store.name}`, store.name);

    for (const node of this.nodes.values()) {
      if (node.kind === 'source') continue;
      for (const parent of node.parents) {
        const parentNode = this.nodes.get(parent);
        if (parentNode === undefined) throw new IqgateError('INVALID_CONFIG', `node "${node.name}" has unknown parent "${parent}"`);
        if (parentNode.kind === 'sink') throw new IqgateError('INVALID_CONFIG', `node "${node.name}" cannot have sink "${parent}" as parent`);
        children.get(parent)?.push(node.name);
      }
      if (node.kind === 'processor') {
        for (const store of node.stores) {
          if (!this.stores.has(store)) throw new IqgateError('STORE_NOT_FOUND', `processor "${node.name}" uses undefined store "${store}"`);
        }
      }
    }
    for (const store of this.stores.values()) {
      for (const subscriber of store.changeSubscribers) {
        const node = this.nodes.get(subscriber);
        if (node === undefined || node.kind === 'source') {
          throw new IqgateError('INVALID_CONFIG', `store "${store.name}" feeds unknown or source node "${subscriber}"`);
        }
      }
    }

    // Connected components over node edges, store usage and store-change edges.
    const parent = new Map<string, string>();
    const find = (x: string): string => {
      let root = x;
      while (parent.get(root) !== root) root = parent.get(root) ?? root;
      parent.set(x, root);
      return root;
    };
    const union = (a: string, b: string): void => {
      const ra = find(a);
      const rb = find(b);
      if (ra !== rb) parent.set(ra, rb);
    };
    for (const name of this.nodes.keys()) parent.set(name, name);
    for (const store of this.stores.keys()) parent.set(`store:${store}`, `store:${store}`);
    for (const node of this.nodes.values()) {
      if (node.kind !== 'source') for (const p of node.parents) union(node.name, p);
      if (node.kind === 'processor') for (const s of node.stores) union(node.name, `store:${s}`);
    }
    for (const store of this.stores.values()) for (const s of store.changeSubscribers) union(s, `store:${store.name}`);

    const groups = new Map<string, { nodes: string[]; stores: string[]; topics: Set<string> }>();
    for (const key of parent.keys()) {
      const root = find(key);
      let group = groups.get(root);
      if (group === undefined) {
        group = { nodes: [], stores: [], topics: new Set() };
        groups.set(root, group);
      }
      const storeName = storeOf.get(key);
      if (storeName !== undefined) group.stores.push(storeName);
      else {
        group.nodes.push(key);
        const node = this.nodes.get(key);
        if (node?.kind === 'source') group.topics.add(node.topic);
      }
    }
    const sourceTopicOwner = new Map<string, number>();
    const subTopologies: SubTopology[] = [];
    for (const group of groups.values()) {
      if (group.topics.size === 0) {
        throw new IqgateError('INVALID_CONFIG', `nodes ${group.nodes.join(', ')} are not reachable from any source`);
      }
      const id = subTopologies.length;
      const sourceTopics = [...group.topics].sort();
      for (const topic of sourceTopics) {
        if (sourceTopicOwner.has(topic)) throw new IqgateError('INVALID_CONFIG', `topic "${topic}" is a source of two sub-topologies`);
        sourceTopicOwner.set(topic, id);
      }
      subTopologies.push({ id, sourceTopics, nodes: group.nodes, stores: group.stores.sort() });
    }
    // Deterministic ids: order sub-topologies by their first source topic.
    subTopologies.sort((a, b) => (a.sourceTopics[0] ?? '').localeCompare(b.sourceTopics[0] ?? ''));
    const ordered = subTopologies.map((s, id) => ({ ...s, id }));

    const nodes = new Map(this.nodes);
    const stores = new Map<string, StoreDefinition>();
    for (const s of this.stores.values()) stores.set(s.name, { ...s, changeSubscribers: [...s.changeSubscribers] });
    return {
      nodes,
      stores,
      subTopologies: ordered,
      children,
      describe: () => ordered.map((s) => `sub-topology ${s.id}: topics [${s.sourceTopics.join(', ')}] nodes [${s.nodes.join(', ')}] stores [${s.stores.join(', ')}]`).join('\n'),
    };
  }

  private checkNewName(name: string): void {
    checkName(name, 'node');
    if (this.nodes.has(name)) throw new IqgateError('INVALID_CONFIG', `node "${name}" is defined twice`);
  }
}

function checkName(name: string, what: string): void {
  if (!NAME.test(name)) throw new IqgateError('INVALID_CONFIG', `invalid ${what} name "${name}" (allowed: letters, digits, . _ -)`);
}
