/**
 * The DSL: the common shapes of Kafka Streams' StreamsBuilder/KStream/KGroupedStream/KTable,
 * compiled to the low-level TopologyBuilder. Only what users reach for first: map/filter/flatMap,
 * `to`, `table` (materialize a topic), and `groupBy → count/reduce/aggregate`.
 *
 * As in Kafka Streams, `groupBy` (a key change) goes through a repartition topic
 * (`<appId>-<name>-repartition`, created by the runtime with the source's partition count), so
 * the aggregate's store partition p holds exactly the keys that the default partitioner sends to
 * p — which is what query routing by key relies on. `groupByKey` does not repartition.
 */
import type { Serde } from '../store/types.js';
import { TopologyBuilder, type Topology, type StreamRecord } from './topology.js';

export class StreamsBuilder {
  readonly builder = new TopologyBuilder();

  stream<K, V>(topic: string, serdes: { key: Serde<K>; value: Serde<V> }): KStream<K, V> {
    const name = this.builder.nextName('SOURCE');
    this.builder.addSource(name, topic, serdes.key, serdes.value);
    return new KStream<K, V>(this, name, serdes.key, serdes.value);
  }

  /**
   * Materializes a topic as a table in `store` (Kafka Streams' `builder.table(topic, Materialized.as(store))`):
   * a null value deletes the key.
   */
  table<K, V>(topic: string, options: { store: string; key: Serde<K>; value: Serde<V> }): KTable<K, V> {
    const source = this.builder.nextName('SOURCE');
    this.builder.addSource(source, topic, options.key, options.value);
    const name = this.builder.nextName('TABLE-SOURCE');
    this.builder.addStore(options.store, options.key, options.value);
    this.builder.addProcessor<K, V | null>(name, (record, context) => {
      const store = context.store<K, V>(options.store);
      if (record.value === null || record.value === undefined) store.delete(record.key);
      else store.put(record.key, record.value);
    }, [source], [options.store]);
    return new KTable<K, V>(this, options.store, options.key, options.value);
  }

  build(): Topology {
    return this.builder.build();
  }
}

export class KStream<K, V> {
  constructor(
    private readonly streams: StreamsBuilder,
    readonly nodeName: string,
    readonly keySerde: Serde<K>,
    readonly valueSerde: Serde<V>,
  ) {}

  private then<K2, V2>(prefix: string, fn: (record: StreamRecord<K, V>, forward: (r: StreamRecord<K2, V2>) => void) => void, keySerde: Serde<K2>, valueSerde: Serde<V2>): KStream<K2, V2> {
    const name = this.streams.builder.nextName(prefix);
    // context.forward is built once per node (task-node-runner.ts): no closure per record.
    this.streams.builder.addProcessor<K, V>(name, (record, context) => fn(record, context.forward), [this.nodeName]);
    return new KStream<K2, V2>(this.streams, name, keySerde, valueSerde);
  }

  filter(predicate: (key: K, value: V) => boolean): KStream<K, V> {
    return this.then<K, V>('FILTER', (r, forward) => {
      if (predicate(r.key, r.value)) forward(r);
    }, this.keySerde, this.valueSerde);
  }

  // The records forwarded below are written out field by field, not spread ({ ...r, value }):
  // an object spread is a runtime call per record, on the path every record of a flatMap takes.

  mapValues<V2>(mapper: (value: V, key: K) => V2, valueSerde: Serde<V2>): KStream<K, V2> {
    return this.then<K, V2>('MAPVALUES', (r, forward) => forward(withKeyValue(r, r.key, mapper(r.value, r.key))), this.keySerde, valueSerde);
  }

  map<K2, V2>(mapper: (key: K, value: V) => { key: K2; value: V2 }, serdes: { key: Serde<K2>; value: Serde<V2> }): KStream<K2, V2> {
    return this.then<K2, V2>('MAP', (r, forward) => {
      const mapped = mapper(r.key, r.value);
      forward(withKeyValue(r, mapped.key, mapped.value));
    }, serdes.key, serdes.value);
  }

  flatMapValues<V2>(mapper: (value: V, key: K) => Iterable<V2>, valueSerde: Serde<V2>): KStream<K, V2> {
    return this.then<K, V2>('FLATMAPVALUES', (r, forward) => {
      for (const value of mapper(r.value, r.key)) forward(withKeyValue(r, r.key, value));
    }, this.keySerde, valueSerde);
  }

  /** Calls `action` for each record (a terminal peek, Kafka Streams' `foreach`). */
  foreach(action: (key: K, value: V) => void): void {
    this.then<K, V>('FOREACH', (r) => action(r.key, r.value), this.keySerde, this.valueSerde);
  }

  to(topic: string, serdes?: { key: Serde<K>; value: Serde<V> }): void {
    const name = this.streams.builder.nextName('SINK');
    this.streams.builder.addSink(name, topic, serdes?.key ?? this.keySerde, serdes?.value ?? this.valueSerde, [this.nodeName]);
  }

  /** Re-keys and repartitions through `<appId>-<name>-repartition`. */
  groupBy<K2>(selector: (key: K, value: V) => K2, options: { key: Serde<K2>; name?: string }): KGroupedStream<K2, V> {
    // map() with the selector's key, without the { key, value } object map() asks its mapper for.
    const rekeyed = this.then<K2, V>('MAP', (r, forward) => forward(withKeyValue(r, selector(r.key, r.value), r.value)), options.key, this.valueSerde);
    const b = this.streams.builder;
    const base = options.name ?? b.nextName('GROUPBY');
    const topic = `${base}-repartition`;
    b.addSink(`${base}-repartition-sink`, topic, options.key, this.valueSerde, [rekeyed.nodeName], { internal: true });
    b.addSource(`${base}-repartition-source`, topic, options.key, this.valueSerde, { internal: true });
    return new KGroupedStream<K2, V>(this.streams, `${base}-repartition-source`, options.key, this.valueSerde);
  }

  /** Groups by the current key, without repartitioning (the key must already be the partitioning key). */
  groupByKey(): KGroupedStream<K, V> {
    return new KGroupedStream<K, V>(this.streams, this.nodeName, this.keySerde, this.valueSerde);
  }
}

export class KGroupedStream<K, V> {
  constructor(
    private readonly streams: StreamsBuilder,
    private readonly nodeName: string,
    private readonly keySerde: Serde<K>,
    private readonly valueSerde: Serde<V>,
  ) {}

  /**
   * Counts records per key. `value: serdes.int64` counts in bigints and writes what Kafka
   * Streams' count() writes (a long, LongSerializer); a number serde counts in numbers.
   */
  count(options: { store: string; value: Serde<bigint> }): KTable<K, bigint>;
  count(options: { store: string; value: Serde<number> }): KTable<K, number>;
  count(options: { store: string; value: Serde<bigint> | Serde<number> }): KTable<K, bigint> | KTable<K, number> {
    // Types are gone at run time: a serde that encodes 0n is a serde of bigints.
    if (encodes(options.value as Serde<bigint>, 0n)) {
      return this.aggregate<bigint>(() => 0n, (_key, _value, count) => count + 1n, options as { store: string; value: Serde<bigint> });
    }
    return this.aggregate<number>(() => 0, (_key, _value, count) => count + 1, options as { store: string; value: Serde<number> });
  }

  reduce(reducer: (aggregate: V, value: V) => V, options: { store: string }): KTable<K, V> {
    const b = this.streams.builder;
    const name = b.nextName('REDUCE');
    b.addStore(options.store, this.keySerde, this.valueSerde);
    b.addProcessor<K, V>(name, (record, context) => {
      if (record.key === null || record.value === null) return; // as Kafka Streams: null keys/values are dropped
      const store = context.store<K, V>(options.store);
      const current = store.get(record.key);
      store.put(record.key, current === undefined ? record.value : reducer(current, record.value));
    }, [this.nodeName], [options.store]);
    return new KTable<K, V>(this.streams, options.store, this.keySerde, this.valueSerde);
  }

  aggregate<A>(initializer: () => A, aggregator: (key: K, value: V, aggregate: A) => A, options: { store: string; value: Serde<A> }): KTable<K, A> {
    const b = this.streams.builder;
    const name = b.nextName('AGGREGATE');
    b.addStore(options.store, this.keySerde, options.value);
    b.addProcessor<K, V>(name, (record, context) => {
      if (record.key === null || record.value === null) return;
      const store = context.store<K, A>(options.store);
      store.put(record.key, aggregator(record.key, record.value, store.get(record.key) ?? initializer()));
    }, [this.nodeName], [options.store]);
    return new KTable<K, A>(this.streams, options.store, this.keySerde, options.value);
  }
}

export class KTable<K, V> {
  constructor(
    private readonly streams: StreamsBuilder,
    readonly storeName: string,
    readonly keySerde: Serde<K>,
    readonly valueSerde: Serde<V>,
  ) {}

  /** The table's changelog stream: one record per key per cache flush, value null for deletes. */
  toStream(): KStream<K, V | null> {
    const b = this.streams.builder;
    const name = b.nextName('TOSTREAM');
    b.addProcessor<K, V | null>(name, (record, context) => context.forward(record), []);
    b.connectStoreChanges(this.storeName, name);
    return new KStream<K, V | null>(this.streams, name, this.keySerde, this.valueSerde as Serde<V | null>);
  }
}

/** `record` with another key and value: its timestamp and headers carried over. */
function withKeyValue<K, V>(record: StreamRecord<unknown, unknown>, key: K, value: V): StreamRecord<K, V> {
  return record.headers === undefined
    ? { key, value, timestamp: record.timestamp }
    : { key, value, timestamp: record.timestamp, headers: record.headers };
}

function encodes<T>(serde: Serde<T>, value: T): boolean {
  try {
    serde.serialize(value);
    return true;
  } catch {
    return false;
  }
}
