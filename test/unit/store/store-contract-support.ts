/** Shared pieces of the store contract suite. */
import { afterEach, beforeEach, expect } from 'vitest';
import { isIqgateError, type ErrorCode } from '../../../src/errors.js';
import type { StoreEngine, StoreEngineOptions, TaskStores } from '../../../src/store/index.js';
import type { EngineHarness, HarnessFactory } from './store-harness.js';

export const STORES = [
  { name: 'counts', partition: 0 },
  { name: 'other', partition: 0 },
];

/** Expects an IqgateError with `code`, thrown by the function or rejected by the promise. */
export async function expectCode(promiseOrFn: Promise<unknown> | (() => unknown), code: ErrorCode): Promise<void> {
  let caught: unknown;
  try {
    await (typeof promiseOrFn === 'function' ? promiseOrFn() : promiseOrFn);
  } catch (error) {
    caught = error;
  }
  expect(isIqgateError(caught, code), `expected IqgateError ${code}, got ${String(caught)}`).toBe(true);
}

/** The storage, the open engine and its task `task-0` (with STORES) of the running test. */
export interface ContractFixture {
  readonly harness: EngineHarness;
  readonly engine: StoreEngine;
  readonly task: TaskStores;
  /** Closes the engine without committing (like a crash) and reopens the same storage and task-0. */
  reopen(): Promise<void>;
  /** Deletes the storage, then opens a fresh one with `options` and task-0. */
  restart(options: StoreEngineOptions): Promise<void>;
}

/** Before each test opens fresh storage, an engine and task-0; after it, closes and deletes them. */
export function openTaskForEachTest(factory: HarnessFactory): ContractFixture {
  let harness!: EngineHarness;
  let engine!: StoreEngine;
  let task!: TaskStores;
  const openTask = async (options?: StoreEngineOptions): Promise<void> => {
    engine = await harness.open(options);
    task = await engine.openTask('task-0', STORES);
  };

  beforeEach(async () => {
    harness = await factory();
    await openTask();
  });

  afterEach(async () => {
    await harness.cleanup();
  });

  return {
    get harness() { return harness; },
    get engine() { return engine; },
    get task() { return task; },
    async reopen() {
      await engine.close();
      await openTask();
    },
    async restart(options) {
      await harness.cleanup();
      harness = await factory();
      await openTask(options);
    },
  };
}
