/**
 * `runBank(config)`: the bank topology on a started runtime. Defaults differ from the
 * runtime's where the demo needs it: a commit interval of 1 s (an aborted transfer stays
 * visible in the uncommitted view for up to that long, long enough to watch), and bad input
 * dead-lettered (`<applicationId>-dlq`) instead of stopping the bank.
 */
import { createRuntime, type Runtime, type RuntimeConfig } from '../../src/runtime/runtime.js';
import type { RuntimeOptionsInput } from '../../src/runtime/runtime-options.js';
import { buildBankTopology, type BankTopologyOptions } from './bank-topology.js';

export type BankConfig = Omit<RuntimeOptionsInput, 'applicationId'> & Pick<RuntimeConfig, 'logger'> & BankTopologyOptions & {
  /** Default `bank`. */
  readonly applicationId?: string;
};

export const BANK_COMMIT_INTERVAL_MS = 1000;

export async function runBank(config: BankConfig): Promise<Runtime> {
  const { transfersTopic, storeName, applicationId, ...options } = config;
  const runtime = createRuntime({
    commitIntervalMs: BANK_COMMIT_INTERVAL_MS,
    deserializationErrors: 'dead-letter',
    processingErrors: 'dead-letter',
    ...options,
    applicationId: applicationId ?? 'bank',
    topology: buildBankTopology({ transfersTopic, ...(storeName !== undefined ? { storeName } : {}) }),
  });
  await runtime.start();
  return runtime;
}
