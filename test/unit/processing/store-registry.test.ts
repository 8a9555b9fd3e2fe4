/**
 * The StoreRegistry tells its listeners of each store partition a task registers, once the
 * partition can be looked up, and a listener that throws neither stops the registration nor
 * the other listeners.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { StoreRegistry } from '../../../src/processing/store-registry.js';
import { createInMemoryDatabase, createInMemoryStoreEngine } from '../../../src/store/index.js';
import type { StoreEngine } from '../../../src/store/types.js';

let engine: StoreEngine | undefined;
afterEach(async () => {
  await engine?.close();
  engine = undefined;
});

async function openTask(taskId: string, partition: number) {
  engine ??= createInMemoryStoreEngine({ database: createInMemoryDatabase() });
  return engine.openTask(taskId, [{ name: 'counts', partition }, { name: 'totals', partition }]);
}

describe('StoreRegistry.watch', () => {
  it('tells of each store partition a task registers, found by get() when told, until let go', async () => {
    const registry = new StoreRegistry();
    const heard: Array<[string, number, boolean]> = [];
    const stop = registry.watch((storeName, partition) => heard.push([storeName, partition, registry.get(storeName, partition) !== undefined]));
    registry.register('0_1', await openTask('0_1', 1), { active: true, state: () => 'RUNNING' });
    expect(heard.sort()).toEqual([['counts', 1, true], ['totals', 1, true]]);
    stop();
    registry.register('0_2', await openTask('0_2', 2), { active: false, state: () => 'RUNNING' });
    expect(heard).toHaveLength(2);
    expect(registry.get('counts', 2)?.active).toBe(false);
  });

  it('a listener that throws stops neither the registration nor the other listeners', async () => {
    const registry = new StoreRegistry();
    const warning = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      registry.watch(() => {
        throw new Error('listener failed');
      });
      const heard: number[] = [];
      registry.watch((_storeName, partition) => heard.push(partition));
      registry.register('0_3', await openTask('0_3', 3), { active: true, state: () => 'RUNNING' });
      expect(heard).toEqual([3, 3]); // counts and totals
      expect(registry.get('totals', 3)?.taskId).toBe('0_3');
      expect(warning).toHaveBeenCalledWith(expect.objectContaining({ message: 'listener failed' }));
    } finally {
      warning.mockRestore();
    }
  });
});
