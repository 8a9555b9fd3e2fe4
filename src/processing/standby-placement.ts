/**
 * Where the standby replicas of each task live (numStandbyReplicas), decided the same way on
 * every instance from the one thing they all learn: the group's owner map — each task's active
 * owner, by the URL it advertises (src/kafka/partition-owner-tracker.ts, on both clients). No
 * assignor of ours takes part (librdkafka runs its own, and takes no userData from JavaScript),
 * so the placement is a pure function of that map, and two instances holding the same map agree
 * on it without talking to each other.
 *
 * For a task whose active owner is member `a` of the n members (the distinct URLs, sorted), its
 * k standbys are k distinct other members, starting at an offset taken from the task's rank among
 * `a`'s tasks of its sub-topology (by partition): the standbys of one member's tasks spread over
 * all the others, so when it dies every survivor has some of its partitions warm, not one
 * survivor all of them. (The partition number itself would not do: assignors often give a member
 * partitions of one stride — 1, 3, 5 of six over three members — whose remainders are all alike.
 * The price: an owner that gains or loses a task shifts the ranks of its others, and with four
 * members or more some of their standbys move; a released standby's data stays on disk, so one
 * that moves back replays only what it missed.)
 * Never on the active's instance; with fewer than k + 1 members, as many as there are others.
 *
 * The map is a few seconds old at worst (it is read back after each rebalance and every 5 s):
 * an instance that the map says is a standby for a task it now runs as active keeps the active
 * (TaskManager releases the standby first), and the next map moves the standby elsewhere.
 */

export interface TaskOwnerEntry {
  readonly subTopology: number;
  readonly partition: number;
  /** The active owner's advertised URL. */
  readonly url: string;
}

export interface TaskPlacement extends TaskOwnerEntry {
  /** The URLs of the instances that keep a standby of the task, in order of preference. */
  readonly standbys: readonly string[];
}

/** Each owned task with its standby hosts (`replicas` of them at most). */
export function placeStandbys(owners: readonly TaskOwnerEntry[], replicas: number): TaskPlacement[] {
  const members = [...new Set(owners.map((o) => o.url))].sort();
  const count = Math.min(Math.max(0, Math.floor(replicas)), members.length - 1);
  if (count <= 0) return owners.map((owner) => ({ ...owner, standbys: [] }));
  // Each task's rank among its owner's tasks of the same sub-topology, by partition.
  const partitionsOf = new Map<string, number[]>();
  for (const { url, subTopology, partition } of owners) {
    const key = `${subTopology} ${url}`;
    const list = partitionsOf.get(key);
    if (list === undefined) partitionsOf.set(key, [partition]);
    else list.push(partition);
  }
  const rankOf = new Map<string, number>();
  for (const [key, list] of partitionsOf) list.sort((x, y) => x - y).forEach((partition, rank) => rankOf.set(`${key} ${partition}`, rank));
  return owners.map((owner) => {
    const active = members.indexOf(owner.url);
    // The others in ring order after the active; the task's rank picks where in that ring to start.
    const others = Array.from({ length: members.length - 1 }, (_, i) => members[(active + 1 + i) % members.length]!);
    const rank = rankOf.get(`${owner.subTopology} ${owner.url} ${owner.partition}`)!;
    const start = rank % others.length;
    return { ...owner, standbys: Array.from({ length: count }, (_, j) => others[(start + j) % others.length]!) };
  });
}
