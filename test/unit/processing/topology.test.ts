import { describe, expect, it } from 'vitest';
import { isIqgateError } from '../../../src/errors.js';
import { StreamsBuilder } from '../../../src/processing/stream-builder.js';
import { TopologyBuilder } from '../../../src/processing/topology.js';
import { serdes } from '../../../src/store/serdes.js';
import { buildWordcountTopology } from '../../../examples/wordcount/index.js';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return isIqgateError(error) ? error.code : 'not an IqgateError';
  }
  return undefined;
}

describe('topology', () => {
  it('splits wordcount at the repartition topic into two sub-topologies, the store in the second', () => {
    const topology = buildWordcountTopology({ inputTopic: 'lines', outputTopic: 'counts' });
    expect(topology.subTopologies).toHaveLength(2);
    const withStore = topology.subTopologies.filter((s) => s.stores.includes('word-counts'));
    expect(withStore).toHaveLength(1);
    expect(withStore[0]?.sourceTopics).toEqual(['words-repartition']);
    expect(topology.subTopologies.find((s) => s.stores.length === 0)?.sourceTopics).toEqual(['lines']);
    const repartitionSink = [...topology.nodes.values()].find((n) => n.kind === 'sink' && n.internal);
    expect(repartitionSink?.kind === 'sink' ? repartitionSink.topic : undefined).toBe('words-repartition');
  });

  it('puts co-partitioned sources that share a store into one sub-topology', () => {
    const b = new TopologyBuilder();
    b.addSource('a', 'orders', serdes.string, serdes.json);
    b.addSource('b', 'payments', serdes.string, serdes.json);
    b.addStore('joined', serdes.string, serdes.json);
    b.addProcessor('pa', (r, c) => c.store<string, unknown>('joined').put(r.key as string, r.value), ['a'], ['joined']);
    b.addProcessor('pb', (r, c) => c.store<string, unknown>('joined').put(r.key as string, r.value), ['b'], ['joined']);
    const topology = b.build();
    expect(topology.subTopologies).toHaveLength(1);
    expect(topology.subTopologies[0]?.sourceTopics).toEqual(['orders', 'payments']);
  });

  it('rejects unknown parents, undeclared stores, duplicate names and bad names with coded errors', () => {
    expect(codeOf(() => new TopologyBuilder().addProcessor('p', () => undefined, ['nope']).build())).toBe('INVALID_CONFIG');
    expect(codeOf(() => new TopologyBuilder().addSource('s', 't', serdes.string, serdes.string).addProcessor('p', () => undefined, ['s'], ['missing']).build())).toBe('STORE_NOT_FOUND');
    expect(codeOf(() => new TopologyBuilder().addSource('s', 't', serdes.string, serdes.string).addSource('s', 'u', serdes.string, serdes.string))).toBe('INVALID_CONFIG');
    expect(codeOf(() => new TopologyBuilder().addSource('s', 'bad topic', serdes.string, serdes.string))).toBe('INVALID_CONFIG');
    expect(codeOf(() => new TopologyBuilder().addStore('x', serdes.string, serdes.string).addStore('x', serdes.string, serdes.string))).toBe('INVALID_CONFIG');
  });

  it('materializes a topic as a table with deletes for null values', () => {
    const b = new StreamsBuilder();
    b.table('users', { store: 'users-by-id', key: serdes.string, value: serdes.json });
    const topology = b.build();
    expect([...topology.stores.keys()]).toEqual(['users-by-id']);
    expect(topology.subTopologies[0]?.sourceTopics).toEqual(['users']);
  });
});
