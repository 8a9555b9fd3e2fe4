/**
 * The one way this gateway talks to another instance: a GraphQL POST to the owner's advertised
 * URL, marked with FORWARDED_HEADER (signed with the cluster secret when there is one:
 * gate/peer-signature.ts), bounded by a time budget, the client's abort signal and a size.
 * Key lookups (forward-keys.ts) and scans (forward-page.ts) build their query on top of it;
 * what an answer means is theirs to decide, how it travels and how its failures read is here.
 *
 * An owner's URL comes from the group's metadata, which any member writes: it is followed only
 * over http(s), never through a redirect, and its answer is read up to MAX_ANSWER_BYTES, so a
 * bad member can fail a forward but not steer it elsewhere or exhaust this instance.
 */
import { Buffer } from 'node:buffer';
import type { PartitionFailure, PartitionOutcome, QueryOptions } from '../query/query-types.js';
import { ERROR_CODES, isErrorCode } from '../errors.js';
import { Position, type PositionJSON } from '../store/position.js';
import { signForward } from './gate/peer-signature.js';
import { FORWARDED_HEADER } from './gate/request-gate.js';
import type { PeerHealth } from './peer-health.js';
import { lagField } from './lag-field.js';

export { FORWARDED_HEADER };

/** The largest answer a forward reads (a page of 1000 entries of 16 KiB values fits). */
export const MAX_ANSWER_BYTES = 32 * 1024 * 1024;

/** How this instance reaches its peers: the time a forward may take and the secret it signs with. */
export interface PeerLink {
  readonly timeoutMs: number;
  /** The cluster secret; without one, forwards are marked, unsigned (anonymous clusters only). */
  readonly secret: string | undefined;
  /** Peers that failed a forward just now (skipped for a while; their standbys answer). */
  readonly health?: PeerHealth;
}

/** A failure field as the owner reports it (`failure { reason message owner }`). */
export interface RemoteFailure {
  readonly reason: PartitionFailure['reason'];
  readonly message: string;
  readonly owner?: string | null;
  readonly standbys?: readonly string[] | null;
}

/** A partition outcome as the owner reports it (`partitions { partition position failure executionInfo }`). */
export interface RemotePartition {
  readonly partition: number;
  readonly position: PositionJSON | null;
  readonly failure: RemoteFailure | null;
  readonly executionInfo: string[] | null;
  readonly standby?: boolean | null;
  readonly lag?: { readonly offsets: number; readonly timeMs: number } | null;
  readonly servedBy?: string | null;
}

export interface RemoteError {
  readonly message: string;
  readonly path?: ReadonlyArray<string | number>;
  readonly extensions?: { readonly code?: unknown };
}

export interface RemoteResponse<T> {
  readonly data?: T | null;
  readonly errors?: readonly RemoteError[];
}

/** Something the owner did that makes its answer unusable; its message is safe for clients. */
export class ForwardError extends Error {}

/**
 * The time a forward may take: the gateway's forwardTimeoutMs, plus the bound wait the owner
 * may spend before it answers (it applies boundTimeoutMs itself).
 */
export function forwardBudget(forwardTimeoutMs: number, options: QueryOptions): number {
  return forwardTimeoutMs + options.boundTimeoutMs;
}

/** The read options' variable definitions and arguments, the same on every forwarded query. */
export const READ_VARIABLES = '$readCommitted: Boolean, $positionBound: Position, $boundTimeoutMs: Int, $requireActive: Boolean, $allowStale: Boolean, $executionInfo: Boolean, $maxLag: Int';
export const READ_ARGUMENTS = 'readCommitted: $readCommitted, positionBound: $positionBound, boundTimeoutMs: $boundTimeoutMs, requireActive: $requireActive, allowStale: $allowStale, executionInfo: $executionInfo, maxLag: $maxLag';
/** What a forward reads of each partition's outcome (RemotePartition). */
export const FAILURE_FIELDS = 'failure { reason message owner standbys }';
export const PARTITION_FIELDS = `partitions { partition position ${FAILURE_FIELDS} executionInfo standby lag { offsets timeMs } servedBy }`;

/** The read options as GraphQL variables, the same on every forwarded query. */
export function readOptionVariables(options: QueryOptions): Record<string, unknown> {
  return {
    maxLag: options.maxLag ?? null,
    readCommitted: options.readCommitted,
    positionBound: options.positionBound?.toJSON() ?? null,
    boundTimeoutMs: options.boundTimeoutMs,
    requireActive: options.requireActive,
    allowStale: options.allowStale,
    executionInfo: options.executionInfo,
  };
}

/**
 * Posts one operation to `owner`. Rejects on transport errors, timeouts, aborts, redirects,
 * answers over MAX_ANSWER_BYTES and non-JSON answers.
 */
export async function postForwarded<T>(
  owner: string,
  query: string,
  variables: Record<string, unknown>,
  budget: number,
  clientSignal: ClientSignal | undefined,
  secret: string | undefined,
): Promise<RemoteResponse<T>> {
  let url: URL;
  try {
    url = new URL(owner);
  } catch {
    throw new ForwardError(`the owner's address ${JSON.stringify(owner)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ForwardError(`the owner's address ${owner} is not http(s)`);
  const body = Buffer.from(JSON.stringify({ query, variables }));
  const marker = secret === undefined ? '1' : signForward(secret, 'POST', url.pathname, body);
  const { signal, release } = forwardSignal(budget, clientSignal);
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json', [FORWARDED_HEADER]: marker },
      body,
      signal,
      redirect: 'manual',
    });
    const type = response.headers.get('content-type') ?? '';
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel();
      throw new ForwardError(`${owner} answered a redirect (HTTP ${response.status}), which forwards do not follow`);
    }
    if (!type.includes('json')) {
      await response.body?.cancel();
      throw new ForwardError(`${owner} answered HTTP ${response.status} (${type || 'no content type'})`);
    }
    return JSON.parse(await readCapped(response, owner)) as RemoteResponse<T>;
  } finally {
    release();
  }
}

/** The answer's text, refused past MAX_ANSWER_BYTES (declared or streamed). */
async function readCapped(response: Response, owner: string): Promise<string> {
  const tooLarge = () => new ForwardError(`${owner} answered more than ${MAX_ANSWER_BYTES} bytes`);
  if (Number(response.headers.get('content-length') ?? 0) > MAX_ANSWER_BYTES) {
    await response.body?.cancel();
    throw tooLarge();
  }
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    size += read.value.byteLength;
    if (size > MAX_ANSWER_BYTES) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge();
    }
    chunks.push(read.value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The part of an abort signal a forward relies on: yoga's request signal need not be Node's own. */
interface ClientSignal {
  readonly aborted: boolean;
  readonly reason?: unknown;
  addEventListener(type: 'abort', listener: () => void): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/**
 * One Node AbortSignal that fires after `budget` ms (reason: a TimeoutError) or when the
 * client's signal does (reason: the client's, else an AbortError). Not AbortSignal.any: on
 * Node 24 it accepts only Node's own AbortSignal class (Node 20 let others by), and the
 * signal of a request yoga hands us is @whatwg-node's: a TypeError, so every forward failed
 * with FORWARD_FAILED. `release` drops the timer and the listener once the forward is done,
 * so a long-lived client signal keeps nothing.
 */
export function forwardSignal(budget: number, clientSignal: ClientSignal | undefined): { signal: AbortSignal; release: () => void } {
  const controller = new AbortController();
  const onClientAbort = () => controller.abort(clientSignal?.reason ?? new DOMException('The request was aborted.', 'AbortError'));
  const timer = setTimeout(() => controller.abort(new DOMException(`No answer within ${budget} ms.`, 'TimeoutError')), budget);
  if (clientSignal?.aborted) onClientAbort();
  else clientSignal?.addEventListener('abort', onClientAbort);
  return {
    signal: controller.signal,
    release: () => {
      clearTimeout(timer);
      clientSignal?.removeEventListener('abort', onClientAbort);
    },
  };
}

/**
 * The owner's answer had no data for `field`: a ForwardError naming its first error's code.
 * The owner's own message is not passed on (a peer's text is not ours to show a client): a
 * code we know reads as ours, any other as the bare code.
 */
export function noDataError(owner: string, field: string, errors: readonly RemoteError[] | undefined): ForwardError {
  const first = errors?.[0];
  const code = typeof first?.extensions?.code === 'string' && /^[A-Z_]{1,64}$/.test(first.extensions.code) ? first.extensions.code : undefined;
  if (code === undefined) return new ForwardError(`${owner} answered no ${field} result`);
  return new ForwardError(`${owner} answered with an error (${code})${isErrorCode(code) ? `: ${ERROR_CODES[code]}` : ''}`);
}

export function toFailure(remote: RemoteFailure): PartitionFailure {
  return {
    reason: remote.reason,
    message: remote.message,
    ...(remote.owner == null ? {} : { owner: remote.owner }),
    ...(remote.standbys == null ? {} : { standbys: remote.standbys.filter((url) => typeof url === 'string') }),
  };
}

/**
 * The outcome `peer` reported for `partition` as ours: its position or failure (`fallback` when it
 * reported none), whether a standby answered and its lag, `servedBy` the peer (its own claim is
 * not taken: the URL is the one we asked), and with executionInfo, `took` (who answered, how
 * fast) before its own steps.
 */
export function remoteOutcome(
  peer: string,
  partition: number,
  remote: RemotePartition | undefined,
  options: QueryOptions,
  took: string,
  fallback?: PartitionFailure,
): PartitionOutcome {
  const failure = remote?.failure == null ? fallback : toFailure(remote.failure);
  const lag = lagField(remote?.lag);
  return {
    partition,
    ...(remote?.standby === true ? { standby: true } : {}),
    ...(lag === null ? {} : { lag }),
    ...(remote === undefined ? {} : { servedBy: peer }),
    ...(remote?.position == null ? {} : { position: Position.fromJSON(remote.position) }),
    ...(failure === undefined ? {} : { failure }),
    ...(options.executionInfo ? { executionInfo: [took, ...(remote?.executionInfo ?? [])] } : {}),
  };
}

/** The FORWARD_FAILED failure for everything asked of `owner`, described for clients. */
export function forwardFailure(error: unknown, owner: string, budget: number): PartitionFailure {
  return { reason: 'FORWARD_FAILED', message: describe(error, owner, budget), owner };
}

/** A message for clients: what went wrong, not the stack or the HTTP client's internals. */
function describe(error: unknown, owner: string, budget: number): string {
  if (error instanceof ForwardError) return `Forwarding failed: ${error.message}.`;
  const name = error instanceof Error ? error.name : '';
  if (name === 'TimeoutError') return `Forwarding to ${owner} timed out after ${budget} ms.`;
  if (name === 'AbortError') return `Forwarding to ${owner} was abandoned: the request was aborted.`;
  const cause = error instanceof Error ? (error.cause as { code?: unknown } | undefined) : undefined;
  const code = typeof cause?.code === 'string' ? cause.code : error instanceof SyntaxError ? 'invalid JSON' : 'request failed';
  return `Forwarding to ${owner} failed: ${code}.`;
}
