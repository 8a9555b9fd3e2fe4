import { describe, expect, it } from 'vitest';
import { forwardSignal } from '../../../src/graphql/forward-request.js';

// A request signal that is not Node's own AbortSignal class, as @whatwg-node's is.
class ForeignSignal extends EventTarget {
  aborted = false;
  reason: unknown = undefined;
  abort(reason: unknown): void {
    this.aborted = true;
    this.reason = reason;
    this.dispatchEvent(new Event('abort'));
  }
}

describe('forwardSignal', () => {
  it('follows a client signal that is not a Node AbortSignal, with its reason', () => {
    const client = new ForeignSignal();
    const { signal, release } = forwardSignal(60_000, client);
    expect(signal.aborted).toBe(false);
    const reason = new DOMException('gone', 'AbortError');
    client.abort(reason);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(reason);
    release();
  });

  it('fires with a TimeoutError after the budget, and not at all once released', async () => {
    const timed = forwardSignal(5, undefined);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect((timed.signal.reason as Error).name).toBe('TimeoutError');
    const released = forwardSignal(5, new ForeignSignal());
    released.release();
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(released.signal.aborted).toBe(false);
  });

  it('starts aborted when the client already gave up', () => {
    const client = new ForeignSignal();
    client.abort(undefined);
    const { signal, release } = forwardSignal(60_000, client);
    expect((signal.reason as Error).name).toBe('AbortError');
    release();
  });
});
