/**
 * The event loop's split between gateway requests and processing (issue 8 item 6: queries stay
 * fast while processing runs flat out).
 *
 * Processing and the gateway share one JavaScript thread. While no request waits, processing
 * takes all of it, in slices of `processingSliceMs`. While any request waits for its answer, time
 * is cut into periods of PERIOD_MS and processing may start work only in the first
 * (1 − queryShare) of each period: its slices end at the window's end, and the consumers take
 * no new records outside the window (both ask `readyForMore()`; kafkajs waits for it at most
 * 20 ms per batch, and decodes a fetch response whenever it arrives, so both fetch small while
 * any request waits: `maxRecordsPerFetch()`). The rest of each period is the
 * gateway's. Windows are fixed to the clock, so the split needs no measuring and a request that
 * arrives mid-window waits at most the window's remainder plus one consumer batch.
 *
 * A request waits from its start until its response head is written (src/graphql/listen-gateway.ts):
 * a normal query is then answered; an SSE subscription then streams for as long as it stays open,
 * and must not hold processing back while it does.
 */
import type { ProcessingPacer } from '../processing/processing-loop.js';

/** The length of one period of the split (ms). */
export const QUERY_SHARE_PERIOD_MS = 10;

export class QueryShare implements ProcessingPacer {
  private waiting = 0;
  /**
   * When processing first looked (sharing, budgetMs) after the last request stopped waiting, in
   * the caller's clock: the time is taken from the caller so that it can never be compared with
   * another clock's.
   */
  private lastAnsweredAt = Number.NEGATIVE_INFINITY;
  private answeredSinceLastLook = false;
  private readonly windowMs: number;

  /**
   * @param queryShare the share of each period kept for requests while any waits (0 turns the
   *   split off; at most 0.9, so processing always moves)
   * @param sliceMs processing's slice when no request waits
   */
  constructor(queryShare: number, private readonly sliceMs: number) {
    if (!(queryShare >= 0 && queryShare <= 0.9)) throw new RangeError(`queryShare must be within [0, 0.9], got ${String(queryShare)}`);
    this.windowMs = (1 - queryShare) * QUERY_SHARE_PERIOD_MS;
  }

  /** Requests now waiting for their answer. */
  get requestsWaiting(): number {
    return this.waiting;
  }

  /** A request started; the returned function (idempotent) says it no longer waits. */
  requestStarted(): () => void {
    this.waiting += 1;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.waiting -= 1;
      if (this.waiting === 0) this.answeredSinceLastLook = true;
    };
  }

  /**
   * Requests are waiting, or were answered within the last period (counted from processing's
   * first look after the answer, `now` being the caller's clock). A client that sends its next request
   * once the last is answered leaves a gap of well under a millisecond with none waiting: a slice
   * that started in such a gap took processing's whole slice, not the window (slices of 5 ms
   * where the window was 3, bench:query:busy).
   */
  sharing(now: number): boolean {
    if (this.windowMs >= QUERY_SHARE_PERIOD_MS) return false;
    if (this.waiting > 0) return true;
    if (this.answeredSinceLastLook) {
      this.answeredSinceLastLook = false;
      this.lastAnsweredAt = now;
    }
    return now - this.lastAnsweredAt < QUERY_SHARE_PERIOD_MS;
  }

  budgetMs(now: number): number {
    if (!this.sharing(now)) return this.sliceMs;
    const intoPeriod = now % QUERY_SHARE_PERIOD_MS;
    return intoPeriod < this.windowMs ? Math.min(this.sliceMs, this.windowMs - intoPeriod) : 0;
  }

  restMs(now: number): number {
    return Math.max(1, Math.ceil(QUERY_SHARE_PERIOD_MS - (now % QUERY_SHARE_PERIOD_MS)));
  }
}
