/**
 * Per-client token buckets: each client (a principal's subject, or the address of an anonymous
 * one) may send `requestsPerSecond` on average and `burst` at once. Buckets of clients that
 * stopped sending are dropped once full again, so the map holds the active clients only (and
 * at most MAX_CLIENTS: past it, the oldest bucket goes).
 */
export interface RateLimitOptions {
  readonly requestsPerSecond: number;
  /** Default: one second's worth. */
  readonly burst?: number;
}

const MAX_CLIENTS = 100_000;

export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly rate: number;
  private readonly burst: number;

  constructor(options: RateLimitOptions) {
    this.rate = options.requestsPerSecond / 1000;
    this.burst = options.burst ?? Math.max(1, options.requestsPerSecond);
    if (!(options.requestsPerSecond > 0) || !(this.burst >= 1)) throw new TypeError('rate limit: requestsPerSecond must be > 0 and burst >= 1');
  }

  /** Takes one token for `client`: 0 when it may go on, else the seconds until it may retry. */
  take(client: string, now = Date.now()): number {
    let bucket = this.buckets.get(client);
    if (bucket === undefined) {
      if (this.buckets.size >= MAX_CLIENTS) this.evict(now);
      bucket = { tokens: this.burst, at: now };
      this.buckets.set(client, bucket);
    } else {
      bucket.tokens = Math.min(this.burst, bucket.tokens + (now - bucket.at) * this.rate);
      bucket.at = now;
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.ceil((1 - bucket.tokens) / this.rate / 1000);
  }

  private evict(now: number): void {
    for (const [client, bucket] of this.buckets) {
      if (bucket.tokens + (now - bucket.at) * this.rate >= this.burst) this.buckets.delete(client);
    }
    if (this.buckets.size >= MAX_CLIENTS) this.buckets.delete(this.buckets.keys().next().value!);
  }
}
