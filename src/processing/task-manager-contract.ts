/**
 * What a TaskManager is given and what it tells (task-manager.ts): its dependencies, the
 * events it reports, its logger, and its own lifecycle.
 */
import type { StoreEngine } from '../store/types.js';
import type { InstanceCommitOutcome } from './instance-committer.js';
import type { KafkaPorts } from './ports.js';
import type { ProcessingOptions } from './processing-options.js';
import type { ProcessingPacer } from './processing-loop.js';
import type { RestoreProgress } from './restore-task-stores.js';
import type { CommitOutcome, CommitStep, TaskLogger } from './stream-task.js';
import type { Topology } from './topology.js';

export interface TaskManagerLogger extends TaskLogger {
  error(fields: Record<string, unknown>, message: string): void;
  debug(fields: Record<string, unknown>, message: string): void;
}

export interface TaskManagerEvents {
  onCommit?(taskId: string, durationMs: number, records: number, phasesMs?: CommitOutcome['phasesMs']): void;
  /** Exactly-once v2: one commit of the instance's transaction (instead of onCommit per task). */
  onInstanceCommit?(outcome: InstanceCommitOutcome): void;
  onRestoreProgress?(progress: RestoreProgress): void;
  onCommitStep?(step: CommitStep, taskId: string): void;
  /** A processor aborted a task's transaction (ProcessorContext.abortTransaction). */
  onTransactionAborted?(taskId: string, dropped: number, replayed: number): void;
  /** The processing loop's synchronous slices, for the pause figures. */
  onSlice?(durationMs: number, records: number): void;
  onControlWait?(waitMs: number): void;
  /** A non-recoverable error: the runtime stops without committing. */
  onFatal(error: unknown): void;
}

export type ManagerState = 'RUNNING' | 'STOPPING' | 'FAILED';

/** The task manager's own lifecycle (its tasks have theirs: task-state.ts). */
export const MANAGER_TRANSITIONS: Readonly<Record<ManagerState, readonly ManagerState[]>> = {
  RUNNING: ['STOPPING', 'FAILED'],
  STOPPING: ['FAILED'],
  FAILED: [],
};

export interface TaskManagerDeps {
  readonly topology: Topology;
  readonly options: ProcessingOptions;
  readonly ports: KafkaPorts;
  readonly engine: StoreEngine;
  readonly logger: TaskManagerLogger;
  readonly events: TaskManagerEvents;
  readonly clock?: () => number;
  /**
   * The clock of processing's slices and of the pacer's windows (ms, finer than a millisecond:
   * a 3 ms window read from Date.now() ran to 4–6 ms; bench:query:busy). Default: performance.now,
   * or `clock` when one is given (tests' fake clocks).
   */
  readonly sliceClock?: () => number;
  /**
   * When processing may run, asked before each slice and each consumer fetch; default: always,
   * in slices of options.processingSliceMs. The runtime lends part of the event loop to gateway
   * requests while they wait (src/runtime/query-share.ts).
   */
  readonly pacer?: ProcessingPacer;
  /** Partition count of each internal repartition topic (their sinks write packs: options.packRepartition). */
  readonly repartitionPartitions?: ReadonlyMap<string, number>;
  /**
   * The tasks this instance should keep standby replicas of now (standby-placement.ts over the
   * group's owner map); without it, or with options.numStandbyReplicas 0, none.
   */
  readonly standbyPlacement?: () => ReadonlyArray<{ readonly subTopology: number; readonly partition: number }>;
}
