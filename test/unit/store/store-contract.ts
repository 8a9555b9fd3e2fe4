/**
 * The one contract suite every StoreEngine passes (abstract-level's habit: one shared test
 * suite, many implementations). Call it with a harness factory from a *.test.ts file; the
 * harness lets a test close an engine without committing and reopen the same storage.
 */
import { describe } from 'vitest';
import { describeLifecycleContract } from './store-contract-lifecycle.js';
import { describeReadContract } from './store-contract-reads.js';
import { describeUncommittedEventsContract } from './store-contract-uncommitted-events.js';
import type { HarnessFactory } from './store-harness.js';

export function describeStoreContract(name: string, factory: HarnessFactory): void {
  describe(`store contract: ${name}`, () => {
    describeReadContract(factory);
    describeLifecycleContract(factory);
    describeUncommittedEventsContract(factory);
  });
}
