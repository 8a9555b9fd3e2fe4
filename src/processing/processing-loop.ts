/**
 * The processing loop of a task manager: fetched records go into their task's buffer
 * (accept), and slices on the event loop run them through the tasks, round-robin, within the
 * pacer's budget. Back-pressure holds the consumer while tasks are full: the cooperative
 * consumer (librdkafka) through readyForMore(), the eager one (kafkajs) by pausing partitions.
 * The task manager owns the tasks and decides what happens to them; this file only runs them.
 */
import type { GroupConsumerPort, InputRecord } from './ports.js';
import type { StreamTask } from './stream-task.js';

/** Paces the processing loop (see TaskManagerDeps.pacer). */
export interface ProcessingPacer {
  /** Whether processing shares the event loop at `now` (the slice clock's ms): its budget is cut into windows. */
  sharing(now: number): boolean;
  /** How long processing may run from `now` (ms, the slice clock's); 0 when it must rest. */
  budgetMs(now: number): number;
  /** How long until processing may run again (ms, ≥ 1), asked when budgetMs() is 0. */
  restMs(now: number): number;
}

/** Without a pacer: processing never rests, in slices of `sliceMs`. */
export function fullSlices(sliceMs: number): ProcessingPacer {
  return { sharing: () => false, budgetMs: () => sliceMs, restMs: () => 1 };
}

/**
 * Records per consumer fetch while the pacer shares the event loop: librdkafka hands 250 over in
 * ~1.2 ms of the main thread (bench:query:busy: 250 kept queries at 0.70× idle and processing at
 * 20–27k records/s; 100 starved processing, 500 made queries wait behind the hand-over). kafkajs
 * takes a finite hint as "fetch small" (its own sizes, src/kafka/group-consumer.ts).
 */
const SHARED_FETCH_RECORDS = 250;

/** Records a task processes before the loop moves on to the next one. */
const RECORDS_PER_TURN = 200;

export interface ProcessingLoopDeps {
  /** The tasks taking records now, in the order the loop goes round them. */
  readonly tasks: () => ReadonlyMap<string, StreamTask>;
  readonly consumer: GroupConsumerPort;
  readonly maxBufferedRecordsPerTask: number;
  readonly pacer: ProcessingPacer;
  readonly sliceClock: () => number;
  /** No slice runs: the manager is stopping or failed. */
  readonly halted: () => boolean;
  /** Processing holds within the record that crossed the uncommitted-bytes limit (KIP-892), until commits free memory. */
  readonly overBudget: () => boolean;
  /** A task's processor failed a record under a rollback policy: its rollback goes to the control queue. */
  readonly onRollback: (task: StreamTask) => void;
  /** A slice threw: fatal for the manager. */
  readonly onError: (error: unknown) => void;
  readonly onSlice?: (durationMs: number, records: number) => void;
}

export class ProcessingLoop {
  private scheduled = false;
  /** Tasks whose partitions are paused because their buffer is full (eager consumers). */
  private readonly backpressured = new Set<StreamTask>();
  /** Records buffered across tasks, as counted by readyForMore() (cooperative consumers). */
  private bufferedTotal = 0;
  /** Where the next slice starts its round over the tasks. */
  private nextTaskIndex = 0;

  constructor(private readonly deps: ProcessingLoopDeps) {}

  /** Hands fetched records to their task and schedules a slice. */
  accept(task: StreamTask, records: readonly InputRecord[]): void {
    task.enqueue(records);
    const { consumer } = this.deps;
    if (consumer.cooperative === true) {
      // Back-pressure through readyForMore(): pausing would make librdkafka drop what it prefetched.
      this.bufferedTotal += records.length;
    } else if (task.buffered() >= this.deps.maxBufferedRecordsPerTask && !this.backpressured.has(task)) {
      this.backpressured.add(task);
      consumer.pause(task.sourcePartitions);
    }
    this.schedule();
  }

  /**
   * Records buffered across tasks stay under maxBufferedRecordsPerTask per running task. An
   * estimate kept without walking every task per fetch: counted up on arrival, recounted
   * exactly once it says "full".
   */
  readyForMore(): boolean {
    // While the pacer rests, no new records either: handing them over (librdkafka) or decoding
    // the next fetch (kafkajs) is processing too.
    if (this.deps.pacer.budgetMs(this.deps.sliceClock()) <= 0) return false;
    // The eager adapter (kafkajs) has back-pressure by pausing partitions (accept), and waits
    // here only a few milliseconds: for it this answers for the pacer alone.
    if (this.deps.consumer.cooperative !== true) return true;
    const tasks = this.deps.tasks();
    const limit = this.deps.maxBufferedRecordsPerTask * Math.max(1, tasks.size);
    if (this.bufferedTotal < limit) return true;
    let total = 0;
    for (const task of tasks.values()) total += task.buffered();
    this.bufferedTotal = total;
    return total < limit;
  }

  maxRecordsPerFetch(): number {
    return this.deps.pacer.sharing(this.deps.sliceClock()) ? SHARED_FETCH_RECORDS : Infinity;
  }

  /** A retained task's partitions were resumed by the rebalance: paused again while its buffer is full. */
  keepHeld(task: StreamTask): void {
    if (this.backpressured.has(task)) this.deps.consumer.pause(task.sourcePartitions);
  }

  /** The task no longer takes records (revoked, lost). */
  release(task: StreamTask): void {
    this.backpressured.delete(task);
  }

  schedule(): void {
    if (this.scheduled || this.deps.halted()) return;
    this.scheduled = true;
    setImmediate(() => this.slice());
  }

  /** The pacer said rest: the loop comes back after `ms` (new records do not bring it sooner). */
  private rest(ms: number): void {
    this.scheduled = true;
    setTimeout(() => this.slice(), ms);
  }

  /**
   * One slice: round-robin over tasks with buffered records until the slice budget is spent,
   * then yield (timers, I/O, queries run between slices). A task whose commit is in flight processes on.
   */
  private slice(): void {
    this.scheduled = false;
    const { pacer, sliceClock, overBudget } = this.deps;
    if (this.deps.halted() || overBudget()) return;
    const started = sliceClock();
    const budget = pacer.budgetMs(started);
    if (budget <= 0) {
      this.rest(pacer.restMs(started));
      return;
    }
    const deadline = started + budget;
    let total = 0;
    let more = false;
    try {
      // Round-robin across slices: each slice starts after the task the previous one reached,
      // so a task late in the map is never starved by the ones before it (a slice can end
      // before reaching it: with a backlog, the first tasks alone fill the slice).
      const tasks = [...this.deps.tasks().values()];
      const first = tasks.length === 0 ? 0 : this.nextTaskIndex % tasks.length;
      let progressed = true;
      while (progressed && sliceClock() < deadline) {
        progressed = false;
        for (let i = 0; i < tasks.length; i += 1) {
          const index = (first + i) % tasks.length;
          const task = tasks[index]!;
          this.nextTaskIndex = index + 1;
          if (!task.canProcess()) continue;
          const n = task.processSome(RECORDS_PER_TURN, deadline, sliceClock, overBudget);
          total += n;
          if (task.rollback !== null) this.deps.onRollback(task);
          if (n > 0) progressed = true;
          if (this.backpressured.has(task) && task.buffered() <= this.deps.maxBufferedRecordsPerTask / 2) {
            this.backpressured.delete(task);
            this.deps.consumer.resume(task.sourcePartitions);
          }
          if (sliceClock() >= deadline || overBudget()) break;
        }
        if (overBudget()) break;
      }
      for (const task of this.deps.tasks().values()) if (task.canProcess()) { more = true; break; }
    } catch (error) {
      this.deps.onError(error);
      return;
    }
    this.deps.onSlice?.(sliceClock() - started, total);
    if (more) this.schedule();
  }
}
