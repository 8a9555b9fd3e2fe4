/**
 * What the bank's input topic carries, keyed by branch id: a branch opening its accounts, and
 * transfers between two accounts of the branch. The serde validates each event once, at the
 * edge (a record that does not fit is DECODE_FAILED and goes where the runtime's
 * deserialization policy sends it); the processor trusts what it gets.
 */
import { z } from 'zod';
import { IqgateError } from '../../src/errors.js';
import { serdes } from '../../src/store/serdes.js';
import type { Serde } from '../../src/store/types.js';

const accountId = z.string().min(1).max(64);
const money = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

const openEvent = z.object({
  type: z.literal('open'),
  /** Account → opening balance. The branch's opening total is their sum. */
  accounts: z.record(accountId, money).refine((a) => Object.keys(a).length >= 2, 'a branch opens at least two accounts'),
});

const transferEvent = z.object({
  type: z.literal('transfer'),
  id: z.string().min(1).max(64),
  from: accountId,
  to: accountId,
  amount: money.positive(),
  /**
   * Marked to fail half-way: the processor debits `from`, then the credit "fails" and it aborts
   * the transaction (ProcessorContext.abortTransaction). The demo's generator marks a chosen
   * fraction of transfers, so aborts can be watched in the uncommitted view.
   */
  abort: z.boolean().optional(),
}).refine((t) => t.from !== t.to, 'a transfer moves money between two different accounts');

export const bankEventSchema = z.union([openEvent, transferEvent]);
export type BankEvent = z.infer<typeof bankEventSchema>;
export type OpenEvent = z.infer<typeof openEvent>;
export type TransferEvent = z.infer<typeof transferEvent>;

/** JSON on the wire, checked against bankEventSchema when read. */
export const bankEventSerde: Serde<BankEvent> = {
  name: 'json',
  serialize: (event) => serdes.json.serialize(event),
  deserialize: (bytes) => {
    const parsed = bankEventSchema.safeParse(serdes.json.deserialize(bytes));
    if (!parsed.success) {
      const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'event'}: ${issue.message}`).join('; ');
      throw new IqgateError('DECODE_FAILED', `not a bank event: ${problems}`, { cause: parsed.error });
    }
    return parsed.data;
  },
};
