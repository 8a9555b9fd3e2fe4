import { describeStoreContract } from './store-contract.js';
import { levelHarness } from './store-harness.js';

describeStoreContract('LevelDB engine', levelHarness);
