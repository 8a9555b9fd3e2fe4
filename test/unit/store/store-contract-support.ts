/** Shared pieces of the store contract suite. */
import { expect } from 'vitest';
import { isIqgateError, type ErrorCode } from '../../../src/errors.js';

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
