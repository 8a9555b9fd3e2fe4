/**
 * The bank: branches of accounts. Every event is keyed by its branch, so all of a branch's
 * events land in one partition, one task, and each transfer — a debit and a credit of two
 * accounts of the branch — is applied inside that task's transaction. The `balances` store
 * holds one value per branch (its accounts and balances), so the committed view of a branch
 * always sums to its opening total: a transfer is committed whole or not at all.
 *
 * Transfers marked `abort` fail half-way on purpose: the debit is written, then the processor
 * aborts the transaction (ProcessorContext.abortTransaction). Until the commit point the
 * uncommitted view shows the branch short of the debited amount; then the abort rolls the
 * transaction back, the branch's other transfers of that transaction are replayed, and the
 * shortfall vanishes. The committed view never shows it.
 */
import { TopologyBuilder } from '../../src/processing/topology.js';
import type { Topology } from '../../src/processing/topology.js';
import { serdes } from '../../src/store/serdes.js';
import { bankEventSerde, type BankEvent, type OpenEvent, type TransferEvent } from './bank-events.js';

/** A branch as the `balances` store holds it (JSON). */
export interface BranchState {
  /** The sum of the opening balances: every committed state of the branch sums to it. */
  readonly opening: number;
  /** Account → balance. */
  readonly accounts: Readonly<Record<string, number>>;
  /** Transfers applied. */
  readonly applied: number;
  /** Transfers refused: not enough money in `from`, or an account the branch does not have. */
  readonly refused: number;
  /** The last transfer applied or refused. */
  readonly lastTransfer: string | null;
}

export interface BankTopologyOptions {
  /** Input topic: bank events keyed by branch id (bank-events.ts). */
  readonly transfersTopic: string;
  /** Default `balances`. */
  readonly storeName?: string;
}

export const DEFAULT_BANK_STORE = 'balances';

/** The sum of a branch's balances (the invariant: equal to `opening` in every committed state). */
export function branchTotal(branch: Pick<BranchState, 'accounts'>): number {
  let total = 0;
  for (const balance of Object.values(branch.accounts)) total += balance;
  return total;
}

export function openBranch(event: OpenEvent): BranchState {
  return { opening: branchTotal(event), accounts: { ...event.accounts }, applied: 0, refused: 0, lastTransfer: null };
}

/** A transfer applied whole, or refused (and counted) when the branch cannot make it. */
export function applyTransfer(branch: BranchState, transfer: TransferEvent): BranchState {
  const from = branch.accounts[transfer.from];
  const to = branch.accounts[transfer.to];
  if (from === undefined || to === undefined || from < transfer.amount) {
    return { ...branch, refused: branch.refused + 1, lastTransfer: transfer.id };
  }
  return {
    ...branch,
    accounts: { ...branch.accounts, [transfer.from]: from - transfer.amount, [transfer.to]: to + transfer.amount },
    applied: branch.applied + 1,
    lastTransfer: transfer.id,
  };
}

export function buildBankTopology(options: BankTopologyOptions): Topology {
  const storeName = options.storeName ?? DEFAULT_BANK_STORE;
  const builder = new TopologyBuilder();
  builder.addSource('transfers', options.transfersTopic, serdes.string, bankEventSerde);
  builder.addStore(storeName, serdes.string, serdes.json);
  builder.addProcessor<string, BankEvent>('apply', (record, context) => {
    const balances = context.store<string, BranchState>(storeName);
    const event = record.value;
    const branch = balances.get(record.key);
    if (event.type === 'open') {
      // Opening is idempotent: a feed restarted against existing state re-sends it.
      if (branch === undefined) balances.put(record.key, openBranch(event));
      return;
    }
    if (branch === undefined) return; // no such branch (yet): nothing to move money in
    if (event.abort === true) {
      // Half a transfer: the debit is written (when there is money to debit), then the credit
      // fails — so the whole transaction goes, and a marked transfer never takes effect.
      const from = branch.accounts[event.from];
      if (from !== undefined && from >= event.amount) {
        balances.put(record.key, { ...branch, accounts: { ...branch.accounts, [event.from]: from - event.amount }, lastTransfer: event.id });
      }
      context.abortTransaction(`transfer ${event.id} of ${record.key}: the credit of ${event.amount} to ${event.to} failed`);
      return;
    }
    balances.put(record.key, applyTransfer(branch, event));
  }, ['transfers'], [storeName]);
  return builder.build();
}
