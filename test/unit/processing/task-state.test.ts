import { describe, expect, it } from 'vitest';
import { isIqgateError } from '../../../src/errors.js';
import { TASK_TRANSITIONS, isLegalTransition, transition, type TaskState } from '../../../src/processing/task-state.js';

const STATES: TaskState[] = ['CREATED', 'RESTORING', 'RUNNING', 'SUSPENDED', 'CLOSED'];

describe('task lifecycle transition table', () => {
  it('allows exactly the documented transitions', () => {
    const legal = new Set(['CREATED>RESTORING', 'CREATED>CLOSED', 'RESTORING>RUNNING', 'RESTORING>SUSPENDED', 'RESTORING>CLOSED',
      'RUNNING>SUSPENDED', 'RUNNING>CLOSED', 'SUSPENDED>RESTORING', 'SUSPENDED>CLOSED']);
    for (const from of STATES) {
      for (const to of STATES) expect(isLegalTransition(from, to), `${from} → ${to}`).toBe(legal.has(`${from}>${to}`));
    }
    expect(Object.keys(TASK_TRANSITIONS).sort()).toEqual([...STATES].sort());
  });

  it('throws ILLEGAL_STATE_TRANSITION naming the task for every illegal transition', () => {
    for (const from of STATES) {
      for (const to of STATES) {
        if (isLegalTransition(from, to)) {
          expect(transition('0_1', from, to)).toBe(to);
          continue;
        }
        let error: unknown;
        try {
          transition('0_1', from, to);
        } catch (e) {
          error = e;
        }
        expect(isIqgateError(error, 'ILLEGAL_STATE_TRANSITION'), `${from} → ${to}`).toBe(true);
        expect((error as Error).message).toContain('0_1');
      }
    }
  });

  it('never leaves CLOSED and never runs without restoring first', () => {
    expect(TASK_TRANSITIONS.CLOSED).toEqual([]);
    for (const from of STATES) if (from !== 'RESTORING') expect(isLegalTransition(from, 'RUNNING')).toBe(false);
  });
});
