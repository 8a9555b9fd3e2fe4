/**
 * Position: the input offsets a store partition has seen, topic → partition → offset, as in
 * Kafka Streams' IQv2 `Position`. Every write carries the (topic, partition, offset) of the
 * input record that caused it; a store partition keeps the highest offset per input
 * partition. Offsets are plain numbers (safe to 2^53, far beyond any Kafka log).
 *
 * Mutable like Kafka's, so the hot write path does not allocate; views handed to readers are
 * `copy()`s so they never change under the reader.
 */
export type PositionJSON = Record<string, Record<string, number>>;

/** One partition's offset, mutable in place so the hot write path needs no map operation. */
interface OffsetCell {
  offset: number;
}

export class Position {
  private readonly topics = new Map<string, Map<number, OffsetCell>>();
  /** The last component advanced: writes mostly come from one input partition after another. */
  private lastTopic: string | undefined;
  private lastPartition = -1;
  private lastCell: OffsetCell | undefined;

  static empty(): Position {
    return new Position();
  }

  static fromJSON(json: PositionJSON): Position {
    const position = new Position();
    for (const [topic, partitions] of Object.entries(json)) {
      for (const [partition, offset] of Object.entries(partitions)) {
        // Canonical decimal only: Number() would also take "1e3", "0x1" or "" as a partition.
        const p = /^(0|[1-9][0-9]{0,9})$/.test(partition) ? Number(partition) : Number.NaN;
        if (!Number.isInteger(p) || p < 0 || !Number.isSafeInteger(offset) || offset < 0) {
          throw new TypeError(`invalid position component ${topic}/${partition}=${String(offset)}`);
        }
        position.advance(topic, p, offset);
      }
    }
    return position;
  }

  /** Records that `offset` of `topic`/`partition` has been applied; keeps the maximum. */
  advance(topic: string, partition: number, offset: number): this {
    let cell = this.lastCell;
    if (partition !== this.lastPartition || topic !== this.lastTopic || cell === undefined) {
      let partitions = this.topics.get(topic);
      if (partitions === undefined) {
        partitions = new Map();
        this.topics.set(topic, partitions);
      }
      cell = partitions.get(partition);
      if (cell === undefined) {
        cell = { offset };
        partitions.set(partition, cell);
      }
      this.lastTopic = topic;
      this.lastPartition = partition;
      this.lastCell = cell;
    }
    if (offset > cell.offset) cell.offset = offset;
    return this;
  }

  /** Folds another position into this one, component-wise maximum. */
  merge(other: Position): this {
    for (const [topic, partitions] of other.topics) {
      for (const [partition, cell] of partitions) this.advance(topic, partition, cell.offset);
    }
    return this;
  }

  offset(topic: string, partition: number): number | undefined {
    return this.topics.get(topic)?.get(partition)?.offset;
  }

  /**
   * True when this position is at or past every component of `bound` (IQv2's
   * `PositionBound.at(bound)` check: a component missing here fails the bound).
   */
  dominates(bound: Position): boolean {
    for (const [topic, partitions] of bound.topics) {
      for (const [partition, { offset }] of partitions) {
        const mine = this.offset(topic, partition);
        if (mine === undefined || mine < offset) return false;
      }
    }
    return true;
  }

  isEmpty(): boolean {
    return this.topics.size === 0;
  }

  copy(): Position {
    return new Position().merge(this);
  }

  equals(other: Position): boolean {
    return this.dominates(other) && other.dominates(this);
  }

  *components(): IterableIterator<{ topic: string; partition: number; offset: number }> {
    for (const [topic, partitions] of this.topics) {
      for (const [partition, { offset }] of partitions) yield { topic, partition, offset };
    }
  }

  toJSON(): PositionJSON {
    const json: PositionJSON = {};
    for (const { topic, partition, offset } of this.components()) {
      (json[topic] ??= {})[String(partition)] = offset;
    }
    return json;
  }
}
