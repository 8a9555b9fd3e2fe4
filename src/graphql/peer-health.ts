/**
 * Which peers failed to answer a forward just now. An owner that refused or timed out is
 * skipped for `downForMs` (default 2 s): its partitions go straight to a standby (KIP-535's
 * fallback) instead of each query paying the refusal, or the whole forward timeout when the
 * owner is cut off rather than dead. The group's owner map catches up by itself (the owner's
 * session expires, the group rebalances); this only bridges the time until it does.
 */
export class PeerHealth {
  private readonly downUntil = new Map<string, number>();

  constructor(
    private readonly downForMs = 2_000,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The peer failed to answer a forward (transport, timeout): skipped for a while. */
  markDown(url: string): void {
    this.downUntil.set(url, this.clock() + this.downForMs);
  }

  /** The peer answered: asked again from now on. */
  markUp(url: string): void {
    this.downUntil.delete(url);
  }

  isDown(url: string): boolean {
    const until = this.downUntil.get(url);
    if (until === undefined) return false;
    if (until > this.clock()) return true;
    this.downUntil.delete(url);
    return false;
  }
}
