/**
 * Who a request is, as the request gate (request-gate.ts) established it, and what it may
 * read. Every resolver that touches a store's data asks `canRead` first (gateway-context.ts's
 * readableStore), so a token for store A never reads store B, whichever way the request came.
 */
import { IqgateError } from '../../errors.js';

export interface Principal {
  /** The token's `sub`, the API key's name, `anonymous`, or `peer` for a verified forward. */
  readonly subject: string;
  readonly via: 'jwt' | 'api-key' | 'anonymous' | 'peer';
  /** Stores whose data it may read; `all` for every store. */
  readonly stores: ReadonlySet<string> | 'all';
  /** Whose rate limit and subscription count this request uses: one per token subject, key, or anonymous address. */
  readonly client: string;
  /**
   * True for a request another instance of this application forwarded and signed with the
   * cluster secret (or, in anonymous mode without a secret, merely marked): it is answered from
   * local partitions only and never forwarded again, so a forward takes one hop at most.
   */
  readonly forwarded: boolean;
}

/** An anonymous caller (anonymous mode), told apart by its address for the limits. */
export function anonymous(address: string | undefined, forwarded = false): Principal {
  return { subject: 'anonymous', via: 'anonymous', stores: 'all', forwarded, client: `address:${address ?? 'unknown'}` };
}

export const PEER: Principal = { subject: 'peer', via: 'peer', stores: 'all', forwarded: true, client: 'peer' };

/** Reads no store: what an operation runs as should it ever reach a resolver without the gate. */
export const NOBODY: Principal = { subject: 'nobody', via: 'anonymous', stores: new Set(), forwarded: false, client: 'nobody' };

export function canRead(principal: Principal, store: string): boolean {
  return principal.stores === 'all' || principal.stores.has(store);
}

/** FORBIDDEN unless `principal` may read `store`; the message names neither the grant nor other stores. */
export function assertCanRead(principal: Principal, store: string): void {
  if (!canRead(principal, store)) throw new IqgateError('FORBIDDEN', `Not allowed to read store "${store}".`);
}

/**
 * The stores a grant names: an array of names, or one string of names separated by spaces or
 * commas (as OAuth scopes are written); `*` anywhere means every store.
 */
export function storeGrant(value: unknown): ReadonlySet<string> | 'all' {
  const names = Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : typeof value === 'string' ? value.split(/[\s,]+/) : [];
  const set = new Set(names.filter((name) => name.length > 0));
  return set.has('*') ? 'all' : set;
}
