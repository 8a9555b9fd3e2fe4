/**
 * Standby placement over the owner map: the same map gives every instance the same answer, a
 * standby is never on its active's instance, and one member's standbys spread over the others.
 */
import { describe, expect, it } from 'vitest';
import { placeStandbys } from '../../../src/processing/standby-placement.js';

const urls = ['http://a/graphql', 'http://b/graphql', 'http://c/graphql'];
/** 12 partitions, owned round-robin by the three members. */
const owners = Array.from({ length: 12 }, (_, partition) => ({ subTopology: 0, partition, url: urls[partition % 3]! }));

describe('placeStandbys', () => {
  it('never places a standby with its active, and places `replicas` distinct ones', () => {
    for (const replicas of [1, 2]) {
      for (const p of placeStandbys(owners, replicas)) {
        expect(p.standbys).toHaveLength(replicas);
        expect(new Set(p.standbys).size).toBe(replicas);
        expect(p.standbys).not.toContain(p.url);
      }
    }
  });

  it('spreads the standbys of one member\'s tasks over every other member', () => {
    const ofA = placeStandbys(owners, 1).filter((p) => p.url === urls[0]);
    expect(new Set(ofA.map((p) => p.standbys[0]))).toEqual(new Set([urls[1], urls[2]]));
  });

  it('gives the same placement whatever order the owner map lists', () => {
    const shuffled = [...owners].reverse();
    const key = (list: ReturnType<typeof placeStandbys>) => Object.fromEntries(list.map((p) => [`${p.subTopology}_${p.partition}`, p.standbys]));
    expect(key(placeStandbys(shuffled, 1))).toEqual(key(placeStandbys(owners, 1)));
  });

  it('places as many as there are other members, and none with one member or zero replicas', () => {
    expect(placeStandbys(owners, 5).every((p) => p.standbys.length === 2)).toBe(true);
    expect(placeStandbys(owners.map((o) => ({ ...o, url: urls[0]! })), 1).every((p) => p.standbys.length === 0)).toBe(true);
    expect(placeStandbys(owners, 0).every((p) => p.standbys.length === 0)).toBe(true);
  });
});
