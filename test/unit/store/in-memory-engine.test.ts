import { describeStoreContract } from './store-contract.js';
import { inMemoryHarness } from './store-harness.js';

describeStoreContract('in-memory engine', inMemoryHarness);
