/**
 * Repartition topics hold records only until the task downstream has committed past them, as in
 * Kafka Streams: they are created with unlimited retention (so a long lag or old record
 * timestamps never let the broker delete what is not processed yet), and every
 * `repartitionPurgeIntervalMs` (Kafka Streams' repartition.purge.interval.ms, 30 s) this
 * instance deletes the records of the partitions it hosts up to the group's committed offset
 * (DeleteRecords). Committed offsets are what a restarted or new owner resumes from, so nothing
 * it will read is deleted; under exactly-once they are read with the committed transactions only.
 * A purge that fails is logged at debug and tried again next time: it frees space, it never
 * decides correctness.
 */
import type { Logger } from 'pino';
import type { AdminPort } from '../processing/ports.js';

export interface RepartitionPurgerOptions {
  readonly admin: AdminPort;
  readonly groupId: string;
  readonly intervalMs: number;
  /** Repartition topic → partitions this instance hosts now (running tasks only). */
  readonly owned: () => Map<string, number[]>;
  readonly logger: Logger;
}

export class RepartitionPurger {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  /** `topic:partition` → the offset records were last deleted before. */
  private readonly purgedTo = new Map<string, number>();

  constructor(private readonly options: RepartitionPurgerOptions) {}

  start(): void {
    if (this.timer !== null || this.options.admin.deleteRecordsBefore === undefined) return;
    this.timer = setInterval(() => {
      this.running ??= this.purgeOnce().finally(() => (this.running = null));
    }, this.options.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** One round: for each hosted repartition partition whose committed offset moved, delete the records before it. */
  async purgeOnce(): Promise<void> {
    const { admin, groupId, logger } = this.options;
    if (admin.deleteRecordsBefore === undefined) return;
    for (const [topic, partitions] of this.options.owned()) {
      if (partitions.length === 0) continue;
      try {
        const committed = await admin.committedOffsets(groupId, topic, partitions);
        const advanced = new Map([...committed].filter(([partition, offset]) => offset > (this.purgedTo.get(`${topic}:${partition}`) ?? 0)));
        if (advanced.size === 0) continue;
        await admin.deleteRecordsBefore(topic, advanced);
        for (const [partition, offset] of advanced) this.purgedTo.set(`${topic}:${partition}`, offset);
      } catch (error) {
        logger.debug({ err: error, topic }, 'purging a repartition topic failed; tried again at the next interval');
      }
    }
  }
}
