/**
 * Which partitions of each repartition topic this instance hosts now: those of its running
 * tasks. A task `<sub-topology>_<partition>` reads that partition of every source topic of its
 * sub-topology (sub-topology-plan.ts).
 */
export function ownedRepartitionPartitions(
  tasks: ReadonlyArray<{ readonly id: string; readonly partition: number; readonly state: string }>,
  groups: readonly (readonly string[])[],
  repartitionTopics: ReadonlyMap<string, number>,
): Map<string, number[]> {
  const owned = new Map<string, number[]>();
  for (const task of tasks) {
    if (task.state !== 'RUNNING') continue;
    const sub = Number(task.id.slice(0, task.id.indexOf('_')));
    for (const topic of groups[sub] ?? []) {
      if (!repartitionTopics.has(topic)) continue;
      const list = owned.get(topic) ?? [];
      list.push(task.partition);
      owned.set(topic, list);
    }
  }
  return owned;
}
