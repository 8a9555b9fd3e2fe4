import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, IqgateError, isIqgateError } from '../../src/errors.js';
import { errorTable } from '../../scripts/docs/error-table.js';

describe('error codes', () => {
  it('are documented in the README exactly as src/errors.ts lists them', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    // Regenerate with `npx tsx scripts/docs/error-table.ts` when a code is added.
    expect(readme).toContain(errorTable());
    const documented = [...readme.matchAll(/^\| `([A-Z_]+)` \|/gm)].map((m) => m[1]);
    expect(documented.sort()).toEqual(Object.keys(ERROR_CODES).sort());
  });

  it('carry code, retriable and cause, and are told apart by code', () => {
    const cause = new Error('disk full');
    const error = new IqgateError('STORE_EXCEPTION', 'commit failed', { cause, retriable: true });
    expect(error).toBeInstanceOf(Error);
    expect(error.code).toBe('STORE_EXCEPTION');
    expect(error.retriable).toBe(true);
    expect(error.cause).toBe(cause);
    expect(isIqgateError(error, 'STORE_EXCEPTION')).toBe(true);
    expect(isIqgateError(error, 'STORE_CLOSED')).toBe(false);
    expect(isIqgateError(new Error('plain'))).toBe(false);
  });
});
