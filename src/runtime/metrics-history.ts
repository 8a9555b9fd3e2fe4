/**
 * The recent history of the processing figures, in fixed intervals (5 s by default, the last
 * 10 minutes kept): commits, records committed, commit latency (mean, longest) and the longest
 * event-loop stall. The reservoirs of ProcessingMetrics answer "how slow are commits"; this
 * answers "since when", which a chart over the last minutes needs (the /dashboard page).
 *
 * The stall is perf_hooks' event-loop delay: how late a timer fired. Processing slices, commit
 * cuts, GC and query work all delay it, and while the loop is held nothing else moves, so its
 * longest value per interval is the processing (and query) pause an operator wants to see.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { MetricsInterval } from '../query/instance-monitor.js';

/** The histogram monitorEventLoopDelay() returns (@types/node 24 names it ELDHistogram, 20 IntervalHistogram). */
type IntervalHistogram = ReturnType<typeof monitorEventLoopDelay>;

export interface MetricsHistoryOptions {
  /** Length of one interval. Default 5 000 ms. */
  readonly intervalMs?: number;
  /** Intervals kept (the running one included). Default 120 (10 minutes at 5 s). */
  readonly keep?: number;
  readonly clock?: () => number;
}

interface OpenInterval {
  start: number;
  commits: number;
  recordsCommitted: number;
  latencySumMs: number;
  latencyMaxMs: number;
  pauseMaxMs: number;
}

export class MetricsHistory {
  private readonly intervalMs: number;
  private readonly keep: number;
  private readonly clock: () => number;
  private readonly closed: MetricsInterval[] = [];
  private current: OpenInterval;
  private histogram: IntervalHistogram | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(options: MetricsHistoryOptions = {}) {
    this.intervalMs = options.intervalMs ?? 5_000;
    this.keep = options.keep ?? 120;
    this.clock = options.clock ?? Date.now;
    if (!Number.isInteger(this.intervalMs) || this.intervalMs < 1) throw new TypeError('intervalMs must be a positive integer');
    if (!Number.isInteger(this.keep) || this.keep < 1) throw new TypeError('keep must be a positive integer');
    this.current = this.open(this.alignedStart(this.clock()));
  }

  /** Starts sampling the event-loop delay; each interval then closes on time (an unref'd timer). */
  start(): void {
    if (this.histogram !== null) return;
    this.histogram = monitorEventLoopDelay({ resolution: 20 });
    this.histogram.enable();
    this.timer = setInterval(() => this.roll(this.clock()), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.histogram?.disable();
    this.histogram = null;
  }

  commit(durationMs: number, records: number): void {
    this.roll(this.clock());
    const c = this.current;
    c.commits += 1;
    c.recordsCommitted += records;
    c.latencySumMs += durationMs;
    c.latencyMaxMs = Math.max(c.latencyMaxMs, durationMs);
  }

  /** Records a pause seen by other means (tests; the event-loop delay is sampled by start()). */
  pause(ms: number): void {
    this.roll(this.clock());
    this.current.pauseMaxMs = Math.max(this.current.pauseMaxMs, ms);
  }

  /** Intervals that started within the last `ms`, oldest first, the running one last. */
  intervals(ms: number): MetricsInterval[] {
    const now = this.clock();
    this.roll(now);
    const from = now - ms;
    const result = this.closed.filter((i) => i.start + i.durationMs > from);
    result.push(this.snapshot(this.current, now - this.current.start, this.sampledPause()));
    return result;
  }

  private alignedStart(now: number): number {
    return now - (now % this.intervalMs);
  }

  private open(start: number): OpenInterval {
    return { start, commits: 0, recordsCommitted: 0, latencySumMs: 0, latencyMaxMs: 0, pauseMaxMs: 0 };
  }

  /** The running interval's stall so far, from the histogram (nanoseconds). */
  private sampledPause(): number {
    const h = this.histogram;
    return h === null || h.count === 0 ? this.current.pauseMaxMs : Math.max(this.current.pauseMaxMs, h.max / 1e6);
  }

  private snapshot(c: OpenInterval, durationMs: number, pauseMaxMs: number): MetricsInterval {
    return {
      start: c.start,
      durationMs,
      commits: c.commits,
      recordsCommitted: c.recordsCommitted,
      commitLatencyAvgMs: c.commits === 0 ? undefined : c.latencySumMs / c.commits,
      commitLatencyMaxMs: c.commits === 0 ? undefined : c.latencyMaxMs,
      pauseMaxMs,
    };
  }

  /** Closes the running interval when its time is up; intervals with nothing in them are kept as zeros. */
  private roll(now: number): void {
    if (now < this.current.start + this.intervalMs) return;
    this.closed.push(this.snapshot(this.current, this.intervalMs, this.sampledPause()));
    this.histogram?.reset();
    const start = this.alignedStart(now);
    // A gap (no timer ran: the loop was held, or start() was not called) leaves empty intervals.
    const firstGap = Math.max(this.current.start + this.intervalMs, start - this.keep * this.intervalMs);
    for (let s = firstGap; s < start; s += this.intervalMs) {
      this.closed.push(this.snapshot(this.open(s), this.intervalMs, 0));
    }
    if (this.closed.length > this.keep - 1) this.closed.splice(0, this.closed.length - (this.keep - 1));
    this.current = this.open(start);
  }
}
