/**
 * A kafkajs Cluster of our own, for protocol requests kafkajs' public API does not offer (a
 * Fetch outside any group, a read_uncommitted ListOffsets). kafkajs hands a consumer's Cluster to
 * its partition-assigner factory, which runs inside kafka.consumer(); the consumer itself is never
 * run or connected (docs/kafkajs-notes.md §4 option B). The Cluster has its own sockets and
 * isolation level: `readUncommitted` makes its ListOffsets answer the high watermark instead of
 * the last stable offset.
 */
// Must precede the first kafkajs import (see the module's comment).
import './kafkajs-patches.js';
import { PartitionAssigners, type Cluster, type Consumer, type Kafka } from 'kafkajs';

export class DetachedCluster {
  readonly cluster: Cluster;
  /** The consumer the cluster came from, kept referenced for as long as the cluster is used. */
  private readonly consumer: Consumer;
  private connecting: Promise<void> | null = null;
  /** connect() was called since the last disconnect(): sockets may be open, even after a failed attempt. */
  private attempted = false;

  constructor(kafka: Kafka, tag: string, options: { readonly readUncommitted?: boolean } = {}) {
    let captured: Cluster | null = null;
    this.consumer = kafka.consumer({
      groupId: `${tag}-unused`,
      readUncommitted: options.readUncommitted ?? false,
      partitionAssigners: [(config) => {
        captured = config.cluster;
        return PartitionAssigners.roundRobin(config);
      }],
    });
    if (captured === null) throw new TypeError('kafkajs did not hand the cluster to the assigner factory');
    this.cluster = captured;
  }

  /** Connects once; callers of the same attempt share it, and a failed attempt is forgotten. */
  connect(): Promise<void> {
    this.attempted = true;
    this.connecting ??= this.cluster.connect().catch((error: unknown) => {
      this.connecting = null;
      throw error;
    });
    return this.connecting;
  }

  /** Closes the cluster's sockets, those of an attempt that failed part way too (its seed broker's connection stays open). */
  async disconnect(): Promise<void> {
    // Cleared before the await: a connect() called meanwhile is a new attempt, for a later disconnect().
    const attempted = this.attempted;
    this.attempted = false;
    this.connecting = null;
    if (attempted) await this.cluster.disconnect().catch(() => undefined);
    void this.consumer;
  }
}
