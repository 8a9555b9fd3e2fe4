/**
 * "No wipe": a restart on a state directory may replay only the changelog tail that its stores
 * have not committed yet, never the whole changelog (a wipe-and-restore would).
 *
 * Why the bound holds: a task that logged `task running` in some run on a directory had restored
 * its store to at least the changelog end measured before that run was spawned (restore reads to
 * the read_committed end, which a restart's InitProducerId has moved past the killed run's open
 * transaction), and a store's changelog position on disk only grows (commits and restores advance
 * it; nothing else writes it). So any later `task running` of that task on that directory has
 * replayed at most `end after the later run − end before the last run where the task ran`. A run
 * killed in the middle of a restore does not advance the baseline (its progress is durable, but we
 * cannot see how far it got), which keeps the bound valid. Offsets count the transaction markers
 * too, so the bound is loose by a few records per commit; a wipe breaks it by the whole
 * changelog. The ends are kafkajs admin's, which lists offsets read_committed: last stable
 * offsets, the same end a restore reads to.
 */
import type { ChildLog } from '../../test/integration/processing/wordcount-child.js';

export interface ReplayCheck {
  readonly label: string;
  readonly dir: string;
  readonly taskId: string;
  readonly partition: number;
  readonly replayed: number;
  /** end after the run − baseline; for a fresh directory, the whole changelog partition. */
  readonly tail: number;
  /** The changelog partition's end after the run (what a wipe would replay). */
  readonly changelogEnd: number;
  /** First restore of this task on this directory: everything is a tail. */
  readonly fresh: boolean;
  readonly ok: boolean;
}

export class ReplayLedger {
  /** state dir → changelog partition → end before the last run in which that task ran */
  private readonly baselines = new Map<string, Map<number, number>>();

  constructor(private readonly statefulPrefix: string) {}

  /**
   * Checks the restores a finished run logged on `dir` and advances the baselines.
   * `endBefore`: changelog ends measured before the run was spawned; `endAfter`: after it ended.
   */
  record(label: string, dir: string, logs: readonly ChildLog[], endBefore: ReadonlyMap<number, number>, endAfter: ReadonlyMap<number, number>): ReplayCheck[] {
    const baseline = this.baselines.get(dir) ?? new Map<number, number>();
    const checks: ReplayCheck[] = [];
    const ran = new Set<number>();
    for (const log of logs) {
      if (log.msg !== 'task running' || typeof log.taskId !== 'string' || !log.taskId.startsWith(this.statefulPrefix)) continue;
      const partition = Number(log.taskId.slice(this.statefulPrefix.length));
      const replayed = Object.values(log.replayed ?? {}).reduce((sum, n) => sum + n, 0);
      const from = baseline.get(partition);
      const changelogEnd = endAfter.get(partition) ?? 0;
      const tail = changelogEnd - (from ?? 0);
      checks.push({ label, dir, taskId: log.taskId, partition, replayed, tail, changelogEnd, fresh: from === undefined, ok: replayed <= tail });
      ran.add(partition);
    }
    for (const partition of ran) baseline.set(partition, endBefore.get(partition) ?? 0);
    this.baselines.set(dir, baseline);
    return checks;
  }
}
