/**
 * The task lifecycle as an explicit transition table, as Kafka Streams' `Task.State`
 * (processor/internals/Task.java): CREATED → RESTORING → RUNNING → SUSPENDED → CLOSED.
 * A SUSPENDED task (revoked, or waiting for the next assignment) may resume RESTORING when it
 * comes back; any state may go to CLOSED. Illegal transitions throw ILLEGAL_STATE_TRANSITION:
 * they are bugs in the task manager, and continuing would risk committing a task twice.
 */
import { IqgateError } from '../errors.js';

export type TaskState = 'CREATED' | 'RESTORING' | 'RUNNING' | 'SUSPENDED' | 'CLOSED';

export const TASK_TRANSITIONS: Readonly<Record<TaskState, readonly TaskState[]>> = {
  CREATED: ['RESTORING', 'CLOSED'],
  RESTORING: ['RUNNING', 'SUSPENDED', 'CLOSED'],
  RUNNING: ['SUSPENDED', 'CLOSED'],
  SUSPENDED: ['RESTORING', 'CLOSED'],
  CLOSED: [],
};

export function isLegalTransition(from: TaskState, to: TaskState): boolean {
  return TASK_TRANSITIONS[from].includes(to);
}

/** Returns `to`, or throws ILLEGAL_STATE_TRANSITION naming the task. */
export function transition(taskId: string, from: TaskState, to: TaskState): TaskState {
  if (!isLegalTransition(from, to)) {
    throw new IqgateError('ILLEGAL_STATE_TRANSITION', `task ${taskId}: illegal transition ${from} → ${to}`, {
      details: { taskId, from, to },
    });
  }
  return to;
}
