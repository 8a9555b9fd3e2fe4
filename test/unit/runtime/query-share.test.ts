import { describe, expect, it } from 'vitest';
import { QUERY_SHARE_PERIOD_MS, QueryShare } from '../../../src/runtime/query-share.js';

describe('QueryShare: the event loop split between waiting requests and processing', () => {
  it('gives processing its whole slice while no request waits', () => {
    const share = new QueryShare(0.5, 5);
    for (let now = 1000; now < 1000 + QUERY_SHARE_PERIOD_MS; now += 1) expect(share.budgetMs(now)).toBe(5);
    expect(share.sharing(1005)).toBe(false);
  });

  it('while a request waits, lets processing start only in the first (1 − share) of each period', () => {
    const share = new QueryShare(0.6, 5);
    const done = share.requestStarted();
    expect(share.sharing(2000)).toBe(true);
    // Period starts at multiples of 10 ms: processing's window is [0, 4) ms of each.
    expect(share.budgetMs(2000)).toBe(4);
    expect(share.budgetMs(2003)).toBe(1);
    expect(share.budgetMs(2004)).toBe(0);
    expect(share.budgetMs(2009)).toBe(0);
    expect(share.restMs(2004)).toBe(6);
    expect(share.restMs(2009)).toBe(1);
    expect(share.budgetMs(2010)).toBe(4);
    done();
    done(); // idempotent: a response that both writes its head and closes counts once
    expect(share.requestsWaiting).toBe(0);
    expect(share.budgetMs(2011)).toBe(3); // processing sees the answer: sharing for one period more…
    expect(share.budgetMs(2021)).toBe(5); // …and then no longer
  });

  it('keeps sharing for one period after the last request was answered: the client\'s next one is on its way', () => {
    const share = new QueryShare(0.7, 5);
    const done = share.requestStarted();
    done();
    // No request waits, yet a slice starting now gets the window's rest, not its whole slice —
    // for one period from processing's first look after the answer (in the caller's clock).
    expect(share.requestsWaiting).toBe(0);
    expect(share.budgetMs(5001)).toBeCloseTo(2);
    expect(share.budgetMs(5005)).toBe(0);
    expect(share.sharing(5010.5)).toBe(true);
    expect(share.sharing(5011)).toBe(false);
    expect(share.budgetMs(5011)).toBe(5);
  });

  it('never gives processing more than its slice inside a window', () => {
    const share = new QueryShare(0.2, 3);
    share.requestStarted();
    expect(share.budgetMs(3000)).toBe(3);
    expect(share.budgetMs(3006)).toBe(2);
  });

  it('turns off with share 0 and refuses a share that would stop processing', () => {
    const off = new QueryShare(0, 5);
    off.requestStarted();
    expect(off.sharing(4009)).toBe(false);
    expect(off.budgetMs(4009)).toBe(5);
    expect(() => new QueryShare(0.95, 5)).toThrow(RangeError);
    expect(() => new QueryShare(-0.1, 5)).toThrow(RangeError);
  });
});
