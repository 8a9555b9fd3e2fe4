export { bankEventSchema, bankEventSerde, type BankEvent, type OpenEvent, type TransferEvent } from './bank-events.js';
export { applyTransfer, branchTotal, buildBankTopology, DEFAULT_BANK_STORE, openBranch, type BankTopologyOptions, type BranchState } from './bank-topology.js';
export { startBankFeed, type BankFeed, type BankFeedOptions } from './bank-feed.js';
export { BANK_COMMIT_INTERVAL_MS, runBank, type BankConfig } from './run-bank.js';
export { startBankDemo, type BankDemo, type BankDemoOptions } from './start-bank-demo.js';
export { accountId, branchId, DEFAULT_BANK_SHAPE, makeTransfer, openingEvents, resolveBankShape, type BankShape } from './transfer-generator.js';
