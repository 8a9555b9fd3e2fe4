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

  it('spreads them also when a member\'s partitions share one stride (1, 3, 5 of six over three members)', () => {
    const strided = [0, 1, 2, 3, 4, 5].map((partition) => ({ subTopology: 1, partition, url: partition % 2 === 0 ? urls[0]! : urls[1]! }));
    // The third member owns a task of another sub-topology only: it is a member all the same.
    const placed = placeStandbys([...strided, { subTopology: 0, partition: 0, url: urls[2]! }], 1);
    for (const owner of [urls[0], urls[1]]) {
      const hosts = placed.filter((p) => p.subTopology === 1 && p.url === owner).map((p) => p.standbys[0]);
      expect(new Set(hosts).size, `standbys of ${owner}'s tasks`).toBe(2);
    }
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
