/**
 * Standby replicas (Kafka Streams' standby tasks, num.standby.replicas): copies of other
 * instances' tasks kept warm here, so that a query still has an answer when the active owner is
 * gone, and a task that moves here restores only the tail.
 *
 * A standby task opens the same store partitions an active task of that id would (the same
 * LevelDB keyspace and metadata) and, every `pollMs`, replays its changelogs under
 * read_committed from the offset stored with its data to the changelog's stable end — the
 * restore path (restore-task-stores.ts), run again and again. So it holds only committed data,
 * and when the task is assigned here as active, its open finds the stored changelog offsets near
 * the end and replays only what came since.
 *
 * Which standbys an instance keeps is `wanted()` (standby-placement.ts over the owner map), minus
 * its own active tasks: never a standby and an active of one task on one instance. Every open,
 * refresh and close runs in the task manager's control queue under the task's id, so the
 * operations of one task — standby or active — run one at a time, in the order they were asked:
 * a standby released for an active open is closed before that open begins (TaskManager).
 *
 * Lag, per task (the largest over its stores): `offsets`, how far the applied changelog offset
 * is behind the stable end read at the last poll; `timeMs`, how long ago the standby was last
 * known to be caught up (0 offsets behind the end then read) — it may have fallen behind since,
 * so it is an upper bound on how old its view is, not an exact age.
 */
import type { StoreEngine, TaskStores } from '../store/types.js';
import type { ControlQueue } from './control-queue.js';
import type { AdminPort, ChangelogReaderPort } from './ports.js';
import { RestoreCancelled, restoreTaskStores } from './restore-task-stores.js';
import type { TaskLogger } from './stream-task.js';
import type { SubTopologyPlan } from './sub-topology-plan.js';
import type { StoreRegistry } from './store-registry.js';
import { taskIdFor } from './topic-names.js';

export interface StandbyLag {
  /** Changelog offsets behind the stable end read at the last poll (the largest over the task's stores); Infinity before a poll has read the ends. */
  readonly offsets: number;
  /** Milliseconds since the standby was last known to be caught up. */
  readonly timeMs: number;
}

/** A standby task as the query layer sees it: its stores, once open, and its lag. */
export interface StandbyTaskView {
  readonly id: string;
  readonly subTopology: number;
  readonly partition: number;
  /** Null until its stores are open. */
  readonly stores: TaskStores | null;
  lag(): StandbyLag;
}

export interface StandbyTasksDeps {
  readonly plans: readonly SubTopologyPlan[];
  readonly engine: StoreEngine;
  readonly admin: Pick<AdminPort, 'endOffsets'>;
  readonly reader: ChangelogReaderPort;
  readonly control: ControlQueue;
  readonly logger: TaskLogger;
  readonly clock: () => number;
  readonly pollMs: number;
  /** The tasks this instance should keep a standby of now (standby-placement.ts). */
  readonly wanted: () => ReadonlyArray<{ readonly subTopology: number; readonly partition: number }>;
  /** Whether the task runs here as active (assigned): then it is no standby here. */
  readonly isActive: (taskId: string) => boolean;
  /** Where the standbys' store partitions are registered for queries while open. */
  readonly registry?: StoreRegistry;
  /** Whether an active task is opening here (polls wait for it). */
  readonly activeOpening?: () => boolean;
  /** A standby's refresh applied `records` changelog records. */
  readonly onApplied?: (taskId: string, records: number) => void;
}

class StandbyTask implements StandbyTaskView {
  stores: TaskStores | null = null;
  /** Released: its operations still queued find it so and do nothing. */
  released = false;
  /** Stable ends read at the last poll, by store name. */
  ends = new Map<string, number>();
  caughtUpAt: number | null = null;
  /** The failure of its last refresh has been logged (once per streak). */
  warned = false;
  /** A refresh has caught it up to ends read at a poll at least once (catchUp). */
  refreshed = false;

  private readonly createdAt: number;

  constructor(readonly id: string, readonly plan: SubTopologyPlan, readonly partition: number, private readonly clock: () => number) {
    this.createdAt = clock();
  }

  get subTopology(): number {
    return this.plan.id;
  }

  lag(): StandbyLag {
    const offsets = this.offsetsBehind();
    const now = this.clock();
    // Never caught up yet: as old as the standby itself.
    return { offsets, timeMs: Math.max(0, now - (this.caughtUpAt ?? this.createdAt)) };
  }

  /**
   * Offsets behind the ends its last poll read; Infinity while no poll has read them yet (just
   * opened, a poll skipped while an active task opens, or the ends unreadable): unknown, so
   * behind any maxLag — it used to read 0 then, and a maxLag read was answered from a standby
   * that had restored nothing (audit, 2026-12-06). GraphQL shows such a lag as null.
   */
  offsetsBehind(): number {
    if (this.ends.size === 0) return Number.POSITIVE_INFINITY;
    const applied = this.stores?.changelogOffsets() ?? {};
    let behind = 0;
    for (const [store, end] of this.ends) behind = Math.max(behind, end - (applied[store] ?? 0));
    return behind;
  }
}

export class StandbyTasks {
  private readonly tasks = new Map<string, StandbyTask>();
  /** Stores released for an active open of their task (release with handOver), until it takes them. */
  private readonly handoffs = new Map<string, { readonly task: StandbyTask; readonly stores: TaskStores }>();
  private readonly planById: ReadonlyMap<number, SubTopologyPlan>;
  private timer: NodeJS.Timeout | null = null;
  /** The poll round under way: a second poll asked meanwhile waits for it instead of starting one. */
  private round: Promise<void> | null = null;
  private stopped = false;
  /** Tells apart the standbys of one id over time: a queued open of a released one never merges with its successor's. */
  private serial = 0;

  constructor(private readonly deps: StandbyTasksDeps) {
    this.planById = new Map(deps.plans.map((plan) => [plan.id, plan]));
  }

  start(): void {
    if (this.timer !== null || this.stopped) return;
    this.timer = setInterval(() => void this.poll(), this.deps.pollMs);
    this.timer.unref();
  }

  /** The standby of `taskId`, while it is one here. */
  get(taskId: string): StandbyTaskView | undefined {
    return this.tasks.get(taskId);
  }

  all(): StandbyTaskView[] {
    return [...this.tasks.values()];
  }

  /**
   * The task stops being a standby here (it is assigned as active, or placed elsewhere): its
   * stores close in the control queue — before any operation of that id asked after this call.
   * Its data stays on disk, with its changelog offsets, for whoever opens the task next.
   *
   * `handOver` (the task is assigned here as active): its stores stay open and registered — a
   * query still finds the partition, answered as this standby's — until the active open takes
   * them (takeHandoff) and registers them as its own, where a close and a reopen left the
   * partition unhosted for the active's producer init and stores open. Stores handed over but
   * never taken (the task went before its open took them) close at the next poll, or are kept on
   * as a standby's again when the placement wants one (its open takes them).
   */
  release(taskId: string, handOver = false): void {
    const task = this.tasks.get(taskId);
    if (task === undefined) return;
    this.tasks.delete(taskId);
    task.released = true;
    this.deps.control.enqueue({
      key: `standby-close:${taskId}:${++this.serial}`,
      group: taskId,
      run: async () => {
        const stores = task.stores;
        if (stores !== null && handOver && !this.stopped) {
          this.handoffs.set(taskId, { task, stores });
          return;
        }
        task.stores = null;
        await this.closeStores(taskId, stores);
      },
    });
  }

  /** The stores a standby handed over for the active open of `taskId` (release with handOver), taken once. */
  takeHandoff(taskId: string): TaskStores | undefined {
    const handoff = this.handoffs.get(taskId);
    if (handoff === undefined) return undefined;
    this.handoffs.delete(taskId);
    handoff.task.stores = null;
    return handoff.stores;
  }

  /** Closes the stores handed over for `taskId`, if its open did not take them; call in the task's turn of the control queue. */
  async dropHandoff(taskId: string): Promise<void> {
    await this.closeStores(taskId, this.takeHandoff(taskId));
  }

  private async closeStores(taskId: string, stores: TaskStores | null | undefined): Promise<void> {
    if (stores === null || stores === undefined) return;
    this.deps.registry?.unregister(taskId, stores);
    try {
      await stores.close();
    } catch (error) {
      this.deps.logger.warn({ taskId, err: error }, 'closing a standby task\'s stores failed');
    }
  }

  /**
   * Stores handed over whose active open never took them (the task was revoked first, or this
   * instance stops; a standby of the task opening again takes them itself): closed in the control
   * queue under the task's id, so after any open still queued for it, if still nobody's then.
   */
  private settleHandoffs(stopping: boolean): void {
    const nobodys = (taskId: string): boolean => this.handoffs.has(taskId) && !this.tasks.has(taskId) && (stopping || !this.deps.isActive(taskId));
    for (const taskId of this.handoffs.keys()) {
      if (!nobodys(taskId)) continue;
      this.deps.control.enqueue({
        // One close a task at a time in the queue (it checks again when it runs).
        key: `standby-handoff-close:${taskId}`,
        group: taskId,
        run: async () => {
          if (nobodys(taskId)) await this.dropHandoff(taskId);
        },
      });
    }
  }

  /** No more polls; the standbys stay open until stop() (a graceful stop commits the active tasks first). */
  pause(): void {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /** No more polls; every standby is released (the caller waits for the control queue). */
  stop(): void {
    this.pause();
    for (const id of [...this.tasks.keys()]) this.release(id);
    this.settleHandoffs(true);
  }

  /** One round: follow the placement, then read every open standby's changelog ends and queue its catch-up to them. */
  poll(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.round ??= this.pollRound().finally(() => {
      this.round = null;
    });
    return this.round;
  }

  /**
   * One poll round and the catch-ups it queued, then where the wanted standbys stand: how many
   * there are, how many are open and caught up once, and the largest lag (offsets behind the
   * ends that round read) among those. The warm-up before a join (join-warmup.ts) repeats it.
   */
  async catchUp(): Promise<{ readonly wanted: number; readonly ready: number; readonly behind: number }> {
    await this.poll();
    await this.deps.control.idle();
    let ready = 0;
    let behind = 0;
    for (const task of this.tasks.values()) {
      if (task.stores === null || !task.refreshed) continue;
      ready += 1;
      behind = Math.max(behind, task.offsetsBehind());
    }
    return { wanted: this.tasks.size, ready, behind };
  }

  private async pollRound(): Promise<void> {
    // Active tasks restore first (as Kafka Streams updates standbys only once no active task
    // restores): a task opening after a rebalance does not share the control queue and the
    // admin client with a round of standby refreshes and placement changes.
    if (this.deps.activeOpening?.() === true) return;
    try {
      this.reconcile();
      const open = [...this.tasks.values()].filter((task) => task.stores !== null);
      if (open.length === 0) return;
      const topics = new Set(open.flatMap((task) => [...task.plan.changelogTopics.values()]));
      const ends = new Map<string, Map<number, number>>();
      await Promise.all([...topics].map(async (topic) => ends.set(topic, await this.deps.admin.endOffsets(topic))));
      for (const task of open) {
        if (task.released) continue;
        for (const [store, topic] of task.plan.changelogTopics) {
          const end = ends.get(topic)?.get(task.partition);
          if (end !== undefined) task.ends.set(store, end);
        }
        this.deps.control.enqueue({ key: `standby-refresh:${task.id}`, group: task.id, run: () => this.refresh(task) });
      }
    } catch (error) {
      this.deps.logger.debug({ err: error }, 'standby poll failed (reading changelog ends); the next poll tries again');
    }
  }

  private reconcile(): void {
    const wanted = new Map<string, { plan: SubTopologyPlan; partition: number }>();
    for (const { subTopology, partition } of this.deps.wanted()) {
      const plan = this.planById.get(subTopology);
      const id = taskIdFor(subTopology, partition);
      // A sub-topology without stores has nothing to keep warm.
      if (plan !== undefined && plan.changelogTopics.size > 0 && !this.deps.isActive(id)) wanted.set(id, { plan, partition });
    }
    for (const id of [...this.tasks.keys()]) if (!wanted.has(id)) this.release(id);
    for (const [id, { plan, partition }] of wanted) {
      if (this.tasks.has(id)) continue;
      const task = new StandbyTask(id, plan, partition, this.deps.clock);
      this.tasks.set(id, task);
      this.deps.control.enqueue({ key: `standby-open:${id}:${++this.serial}`, group: id, run: () => this.open(task) });
    }
    if (this.handoffs.size > 0) this.settleHandoffs(false);
  }

  private async open(task: StandbyTask): Promise<void> {
    if (task.released || this.deps.isActive(task.id)) {
      if (!task.released) this.release(task.id);
      return;
    }
    try {
      // Stores this instance's active open of the task was handed but never took: carry on with them.
      task.stores = this.takeHandoff(task.id) ?? await this.deps.engine.openTask(task.id, [...task.plan.changelogTopics.keys()].map((name) => ({ name, partition: task.partition })));
      this.deps.registry?.register(task.id, task.stores, { active: false, state: () => 'RUNNING', lag: () => task.lag() });
      this.deps.logger.info({ taskId: task.id, changelogOffsets: task.stores.changelogOffsets() }, 'standby task open');
    } catch (error) {
      this.deps.logger.warn({ taskId: task.id, err: error }, 'opening a standby task failed; the next poll tries again');
      if (this.tasks.get(task.id) === task) this.tasks.delete(task.id);
    }
  }

  /** Replays the changelogs from the stored offsets to the ends read at the last poll. */
  private async refresh(task: StandbyTask): Promise<void> {
    const stores = task.stores;
    // Paused or stopped: a graceful stop's last commit waits for the control queue, not for standbys.
    if (task.released || stores === null || this.stopped) return;
    try {
      let applied = 0;
      await restoreTaskStores({
        taskId: task.id,
        partition: task.partition,
        stores,
        changelogTopics: task.plan.changelogTopics,
        endOffset: async (topic) => {
          for (const [store, storeTopic] of task.plan.changelogTopics) if (storeTopic === topic) return task.ends.get(store) ?? 0;
          return 0;
        },
        reader: this.deps.reader,
        onProgress: (progress) => {
          if (progress.done) applied += progress.restored;
        },
        cancelled: () => task.released || this.stopped,
      });
      if (task.offsetsBehind() <= 0) task.caughtUpAt = this.deps.clock();
      task.refreshed = true;
      task.warned = false;
      if (applied > 0) this.deps.onApplied?.(task.id, applied);
    } catch (error) {
      if (error instanceof RestoreCancelled || task.released || this.stopped) return;
      if (!task.warned) this.deps.logger.warn({ taskId: task.id, err: error }, 'a standby task could not catch up; it tries again at the next poll');
      task.warned = true;
    }
  }
}
