/**
 * The crash campaign's events, planned up front from the seed so that a failing campaign can be
 * replayed (`--seed`) and the report names each event exactly.
 *
 * Three kinds of kill:
 *  - `step`: IQGATE_CRASH_AT=<step>:<n>:<stateful task prefix> — the child SIGKILLs itself the
 *    n-th time a task of the counting sub-topology reaches that commit step. The steps are taken
 *    in turn, so every step of the commit protocol is hit about equally often.
 *  - `random`: SIGKILL from outside after a random delay from spawn, so it lands anywhere: while
 *    starting, joining, restoring, processing or committing.
 *  - `zombie`: SIGSTOP past the session timeout while a second instance takes over, then SIGCONT
 *    (the zombie must be fenced) and SIGKILL.
 */
import { COMMIT_STEPS, type CommitStep } from '../../src/processing/stream-task.js';

export type SoakEvent =
  | { readonly kind: 'step'; readonly step: CommitStep; readonly occurrence: number }
  | { readonly kind: 'random'; readonly delayMs: number }
  | { readonly kind: 'zombie'; readonly freezeAfterMs: number; readonly killAfterFenceMs: number };

export interface ScheduleOptions {
  readonly kills: number;
  /** Every `zombieEvery`-th event is a zombie (the first one third in, so a short run has one). */
  readonly zombieEvery: number;
  /** Random kills land within [0, randomMaxMs) of spawning the child. */
  readonly randomMaxMs: number;
  /** A step kill fires at the 1st … maxOccurrence-th time the step is reached. */
  readonly maxOccurrence: number;
}

/** mulberry32: tiny and reproducible. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function planEvents(options: ScheduleOptions, random: () => number): SoakEvent[] {
  const events: SoakEvent[] = [];
  let steps = 0;
  let others = 0;
  for (let i = 0; i < options.kills; i += 1) {
    if (options.zombieEvery > 0 && i % options.zombieEvery === Math.min(2, options.zombieEvery - 1)) {
      events.push({ kind: 'zombie', freezeAfterMs: Math.floor(random() * 1500), killAfterFenceMs: Math.floor(random() * 2000) });
    } else if (others++ % 2 === 0) {
      const step = COMMIT_STEPS[steps++ % COMMIT_STEPS.length] as CommitStep;
      events.push({ kind: 'step', step, occurrence: 1 + Math.floor(random() * options.maxOccurrence) });
    } else {
      events.push({ kind: 'random', delayMs: Math.floor(random() * options.randomMaxMs) });
    }
  }
  return events;
}

export function describeEvent(event: SoakEvent): string {
  switch (event.kind) {
    case 'step': return `step ${event.step}:${event.occurrence}`;
    case 'random': return `random +${event.delayMs}ms`;
    case 'zombie': return `zombie (freeze +${event.freezeAfterMs}ms)`;
  }
}
