/**
 * PreparedProducers: which per-task producers a warming instance connects ahead, and which it
 * lets go — those an assignment did not bring, or all of them once the warm-up ends without one.
 */
import { describe, expect, it } from 'vitest';
import { PreparedProducers } from '../../../src/processing/prepared-producers.js';
import type { ProducerFactoryPort } from '../../../src/processing/ports.js';
import { planSubTopologies } from '../../../src/processing/sub-topology-plan.js';
import { countTopology } from './processing-fixture.js';

function recordingFactory(): { producers: ProducerFactoryPort; prepared: Set<string>; released: string[] } {
  const prepared = new Set<string>();
  const released: string[] = [];
  const producers: ProducerFactoryPort = {
    create: () => { throw new Error('not used'); },
    prepare: (ids) => { for (const id of ids) prepared.add(id); },
    releasePrepared: (keep) => {
      for (const id of [...prepared]) {
        if (keep(id)) continue;
        prepared.delete(id);
        released.push(id);
      }
    },
    close: async () => undefined,
  };
  return { producers, prepared, released };
}

const plans = planSubTopologies(countTopology(), 'app');
const sub = plans.find((p) => p.changelogTopics.size > 0)!.id;
const tasks = [0, 1, 2].map((partition) => ({ subTopology: sub, partition }));

describe('prepared producers', () => {
  it('connects the warmed tasks\' producers; an assignment keeps its own tasks\' and closes the others', () => {
    const f = recordingFactory();
    const p = new PreparedProducers({ producers: f.producers, applicationId: 'app', plans, perTaskTransactions: true });
    p.warming(tasks);
    expect([...f.prepared].sort()).toEqual(['app-in-0', 'app-in-1', 'app-in-2']);
    p.assigned([{ topic: 'in', partition: 1 }]);
    expect(f.released.sort()).toEqual(['app-in-0', 'app-in-2']);
    expect([...f.prepared]).toEqual(['app-in-1']); // its open takes it
    p.warmupOver();
    expect(f.released).toHaveLength(2); // nothing pending once an assignment settled them
  });

  it('closes every one when the warm-up ends without an assignment that brought tasks, once', () => {
    const f = recordingFactory();
    const p = new PreparedProducers({ producers: f.producers, applicationId: 'app', plans, perTaskTransactions: true });
    p.warming(tasks);
    p.warmupOver();
    p.warmupOver();
    expect(f.released.sort()).toEqual(['app-in-0', 'app-in-1', 'app-in-2']);
    expect(f.prepared.size).toBe(0);
  });

  it('prepares nothing without a producer per task (an instance transaction, at-least-once)', () => {
    const f = recordingFactory();
    const p = new PreparedProducers({ producers: f.producers, applicationId: 'app', plans, perTaskTransactions: false });
    p.warming(tasks);
    expect(f.prepared.size).toBe(0);
  });
});
