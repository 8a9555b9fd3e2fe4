/**
 * The bank topology on fake ports (the instance's one transaction, as on librdkafka): branches
 * open once, transfers move money whole or are refused, a transfer marked to abort shows its
 * debit to uncommitted reads only until the commit point, and events that are not bank events
 * are dead-lettered with DECODE_FAILED instead of stopping the bank.
 */
import { describe, expect, it } from 'vitest';
import { bankEventSerde, buildBankTopology, branchTotal, makeTransfer, openingEvents, resolveBankShape, type BankEvent, type BranchState } from '../../../examples/bank/index.js';
import { isIqgateError } from '../../../src/errors.js';
import { serdes } from '../../../src/store/serdes.js';
import { send, type Harness } from '../processing/manager-harness.js';
import { harnessesClosedAfterEach, waitFor } from '../processing/processing-fixture.js';

const harnesses = harnessesClosedAfterEach();

async function startBank(): Promise<Harness> {
  const h = await harnesses.startOnInput({
    topology: buildBankTopology({ transfersTopic: 'in' }), topics: ['in'], eosV2: true,
    options: { deserializationErrors: 'dead-letter', processingErrors: 'fail' },
  });
  await waitFor(() => h.manager.localTasks().every((t) => t.state === 'RUNNING'));
  return h;
}

const event = (h: Harness, branch: string, e: BankEvent | string): void =>
  send(h.broker, 'in', 0, branch, typeof e === 'string' ? e : JSON.stringify(e));

async function branches(h: Harness, readCommitted: boolean): Promise<Map<string, BranchState>> {
  const result = new Map<string, BranchState>();
  const stores = h.manager.localTasks()[0]?.stores;
  if (stores == null) return result;
  const view = stores.store('balances').view({ readCommitted });
  try {
    for await (const { key, value } of view.range()) result.set(serdes.string.deserialize(key), serdes.json.deserialize(value) as BranchState);
  } finally {
    await view.close();
  }
  return result;
}

const open = { type: 'open', accounts: { a: 100, b: 100, c: 100 } } as const;

describe('the bank topology', () => {
  it('opens a branch once and applies transfers whole, refusing what an account cannot pay', async () => {
    const h = await startBank();
    event(h, 'br', open);
    event(h, 'br', { type: 'transfer', id: 't1', from: 'a', to: 'b', amount: 60 });
    event(h, 'br', { type: 'open', accounts: { a: 5, z: 5 } }); // already open: ignored
    event(h, 'br', { type: 'transfer', id: 't2', from: 'a', to: 'c', amount: 41 }); // a has 40
    event(h, 'br', { type: 'transfer', id: 't3', from: 'b', to: 'x', amount: 1 }); // no account x
    event(h, 'nobranch', { type: 'transfer', id: 't4', from: 'a', to: 'b', amount: 1 });
    await h.pump();
    await h.commitAll();
    expect(h.fatal).toEqual([]);
    const committed = await branches(h, true);
    expect(committed).toEqual(new Map([['br', { opening: 300, accounts: { a: 40, b: 160, c: 100 }, applied: 1, refused: 2, lastTransfer: 't3' }]]));
  });

  it('shows a transfer marked to abort as a debit to uncommitted reads only, until the commit point drops it', async () => {
    const h = await startBank();
    event(h, 'br', open);
    await h.pump();
    await h.commitAll();
    event(h, 'br', { type: 'transfer', id: 't1', from: 'a', to: 'b', amount: 10 });
    event(h, 'br', { type: 'transfer', id: 't2', from: 'b', to: 'c', amount: 30, abort: true });
    event(h, 'br', { type: 'transfer', id: 't3', from: 'c', to: 'a', amount: 5 });
    await h.pump();

    const before = (await branches(h, false)).get('br')!;
    expect(branchTotal(before)).toBe(270); // the debit of t2 without its credit
    expect(branchTotal((await branches(h, true)).get('br')!)).toBe(300);

    await h.commitAll();
    const after = (await branches(h, true)).get('br')!;
    expect(after).toEqual({ opening: 300, accounts: { a: 95, b: 110, c: 95 }, applied: 2, refused: 0, lastTransfer: 't3' });
    expect(await branches(h, false)).toEqual(new Map([['br', after]]));
    expect(h.broker.groupOffsets.get('app:in:0')).toBe(4);
  });

  it('dead-letters input that is not a bank event with DECODE_FAILED and goes on', async () => {
    const h = await startBank();
    event(h, 'br', open);
    event(h, 'br', 'not json');
    event(h, 'br', JSON.stringify({ type: 'transfer', id: 't1', from: 'a', to: 'a', amount: 1 }));
    event(h, 'br', JSON.stringify({ type: 'transfer', id: 't2', from: 'a', to: 'b', amount: -5 }));
    event(h, 'br', { type: 'transfer', id: 't3', from: 'a', to: 'b', amount: 1 });
    await h.pump();
    await h.commitAll();
    expect(h.fatal).toEqual([]);
    const dead = h.broker.readCommitted('app-dlq', 0, 0).records;
    expect(dead.map((r) => r.headers['iqgate-error-code'])).toEqual(['DECODE_FAILED', 'DECODE_FAILED', 'DECODE_FAILED']);
    expect((await branches(h, true)).get('br')?.applied).toBe(1);
  });
});

describe('bank events and the generator', () => {
  it('rejects a malformed event with a DECODE_FAILED naming the problem', () => {
    let error: unknown;
    try {
      bankEventSerde.deserialize(Buffer.from(JSON.stringify({ type: 'transfer', id: 't', from: 'a', to: 'b', amount: 0 })));
    } catch (caught) {
      error = caught;
    }
    expect(isIqgateError(error, 'DECODE_FAILED')).toBe(true);
    expect((error as Error).message).toMatch(/amount/);
  });

  it('makes the same transfers for a seed, between two accounts of one branch, marking about the chosen fraction', () => {
    const shape = resolveBankShape({ branches: 3, accountsPerBranch: 4, abortFraction: 0.25 });
    const transfers = Array.from({ length: 2000 }, (_, i) => makeTransfer(9, i, shape));
    expect(Array.from({ length: 2000 }, (_, i) => makeTransfer(9, i, shape))).toEqual(transfers);
    expect(makeTransfer(10, 0, shape)).not.toEqual(transfers[0]);
    const ids = new Set(openingEvents(shape).map(([id]) => id));
    for (const [branch, t] of transfers) {
      expect(ids.has(branch)).toBe(true);
      expect(t.from).not.toBe(t.to);
      expect(t.amount).toBeGreaterThan(0);
      expect(() => bankEventSerde.deserialize(bankEventSerde.serialize(t))).not.toThrow();
    }
    const marked = transfers.filter(([, t]) => t.abort === true).length / transfers.length;
    expect(marked).toBeGreaterThan(0.2);
    expect(marked).toBeLessThan(0.3);
    expect(new Set(transfers.map(([b]) => b)).size).toBe(3);
  });

  it('refuses shapes it cannot generate', () => {
    expect(() => resolveBankShape({ accountsPerBranch: 1 })).toThrow(RangeError);
    expect(() => resolveBankShape({ abortFraction: 1.5 })).toThrow(RangeError);
    expect(() => resolveBankShape({ branches: 0 })).toThrow(RangeError);
  });
});
