/**
 * Deterministic bank input: transfer i of a seed is always the same, so a test can recompute
 * the expected balances from (seed, count, shape) alone. Branch ids are the record keys.
 */
import type { OpenEvent, TransferEvent } from './bank-events.js';
import { rng } from '../seeded-random.js';

export interface BankShape {
  /** Default 4. */
  readonly branches: number;
  /** Accounts per branch; default 5. */
  readonly accountsPerBranch: number;
  /** Each account's opening balance; default 1000. */
  readonly openingBalance: number;
  /** Fraction of transfers marked to abort half-way, in [0, 1]; default 0.1. */
  readonly abortFraction: number;
}

export const DEFAULT_BANK_SHAPE: BankShape = { branches: 4, accountsPerBranch: 5, openingBalance: 1000, abortFraction: 0.1 };

export function resolveBankShape(shape: Partial<BankShape> = {}): BankShape {
  const resolved = { ...DEFAULT_BANK_SHAPE, ...shape };
  const { branches, accountsPerBranch, openingBalance, abortFraction } = resolved;
  if (!Number.isInteger(branches) || branches < 1 || branches > 10_000) throw new RangeError(`branches must be an integer in [1, 10000], not ${branches}`);
  if (!Number.isInteger(accountsPerBranch) || accountsPerBranch < 2 || accountsPerBranch > 1000) throw new RangeError(`accountsPerBranch must be an integer in [2, 1000], not ${accountsPerBranch}`);
  if (!Number.isInteger(openingBalance) || openingBalance < 1 || openingBalance > 1e12) throw new RangeError(`openingBalance must be an integer in [1, 1e12], not ${openingBalance}`);
  if (!(abortFraction >= 0 && abortFraction <= 1)) throw new RangeError(`abortFraction must be in [0, 1], not ${abortFraction}`);
  return resolved;
}

export function branchId(index: number): string {
  return `branch-${String(index).padStart(2, '0')}`;
}

export function accountId(index: number): string {
  return `acct-${String(index).padStart(2, '0')}`;
}

/** The opening event of every branch: [branch id, event]. */
export function openingEvents(shape: BankShape): Array<[string, OpenEvent]> {
  return Array.from({ length: shape.branches }, (_, b) => {
    const accounts: Record<string, number> = {};
    for (let a = 0; a < shape.accountsPerBranch; a += 1) accounts[accountId(a)] = shape.openingBalance;
    return [branchId(b), { type: 'open', accounts }];
  });
}


/**
 * Transfer `index`: a branch, two distinct accounts, an amount up to a fifth of an opening
 * balance, and whether it is marked to abort. Returns [branch id, event].
 */
export function makeTransfer(seed: number, index: number, shape: BankShape): [string, TransferEvent] {
  const next = rng((seed * 2_654_435_761 + index * 40_503 + 7) >>> 0);
  next(); // the first output of a fresh xorshift is poorly mixed
  const branch = Math.floor(next() * shape.branches);
  const from = Math.floor(next() * shape.accountsPerBranch);
  const to = (from + 1 + Math.floor(next() * (shape.accountsPerBranch - 1))) % shape.accountsPerBranch;
  const amount = 1 + Math.floor(next() * Math.max(1, Math.floor(shape.openingBalance / 5)));
  const abort = next() < shape.abortFraction;
  const event: TransferEvent = { type: 'transfer', id: `t-${index}`, from: accountId(from), to: accountId(to), amount, ...(abort ? { abort: true } : {}) };
  return [branchId(branch), event];
}
