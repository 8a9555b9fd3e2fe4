/**
 * What every resolver gets: the engine, the options, and the request's key loaders.
 */
import DataLoader from 'dataloader';
import type { QueryEngine } from '../query/query-engine.js';
import type { KeyLookup, PartitionFailure, PartitionOutcome, QueryOptions } from '../query/query-types.js';
import type { StateProvider } from '../query/state-provider.js';
import type { Bytes } from '../store/types.js';
import { forwardKeys } from './forward-keys.js';
import { IqgateError } from '../errors.js';
import type { StoreDescriptor } from '../query/state-provider.js';
import { assertCanRead, type Principal } from './gate/principal.js';
import type { ResolvedGatewayOptions } from './gateway-options.js';
import { loaderSignature } from './query-args.js';

export interface KeyAnswer {
  readonly lookup: KeyLookup;
  readonly outcome: PartitionOutcome;
}

export interface GatewayContext {
  readonly engine: QueryEngine;
  readonly provider: StateProvider;
  readonly options: ResolvedGatewayOptions;
  /** One loader per distinct read options, created on first use and dropped with the request. */
  readonly keyLoaders: Map<string, DataLoader<Bytes, KeyAnswer, string>>;
  /** Who is asking, as the request gate admitted it (gate/request-gate.ts). */
  readonly principal: Principal;
  /** Entries this request has asked for so far, against options.maxEntriesPerRequest. */
  readonly budget: { entries: number };
  /** Yoga's initial context adds the request; its signal aborts when the client goes away. */
  readonly request?: { readonly signal: AbortSignal; readonly headers?: { get(name: string): string | null } };
}

/**
 * True when this request was itself forwarded by another instance (the gate verified its
 * signature): it is never forwarded again.
 */
export function isForwarded(context: GatewayContext): boolean {
  return context.principal.forwarded;
}

/**
 * The store `name`, when the caller may read it: FORBIDDEN when it may not (asked first, so that
 * a store it may not read answers as one that does not exist would: the names are not told),
 * else STORE_NOT_FOUND or NOT_STARTED as the engine says.
 */
export function readableStore(context: GatewayContext, name: string): StoreDescriptor {
  assertCanRead(context.principal, name);
  return context.engine.store(name);
}

/**
 * Counts `entries` (keys asked, a page's size) against the request's budget, whatever way the
 * sizes arrived — literals, which armor's cost limit prices, or variables, which it cannot see.
 */
export function spend(context: GatewayContext, entries: number): void {
  context.budget.entries += entries;
  const max = context.options.maxEntriesPerRequest;
  if (context.budget.entries > max) {
    throw new IqgateError('QUERY_TOO_COSTLY', `The request asks for more than ${max} entries over all its fields.`, { details: { maxEntriesPerRequest: max } });
  }
}

/**
 * The loader for keys read with these options. All `get` and `getMany` fields of one request
 * that share the options are collected during one tick of execution and become one
 * engine.getMany: one ReadView and one store getMany per partition, so ten aliases cost one
 * snapshot per partition instead of ten, and all of them see the same point in time.
 */
export function keyLoader(context: GatewayContext, options: QueryOptions): DataLoader<Bytes, KeyAnswer, string> {
  const signature = loaderSignature(options);
  let loader = context.keyLoaders.get(signature);
  if (loader === undefined) {
    loader = new DataLoader<Bytes, KeyAnswer, string>(
      async (keys) => {
        // A forwarded request goes no further: a standby kept here answers rather than NOT_PRESENT.
        const result = await context.engine.getMany(isForwarded(context) ? { ...options, standbyFallback: true } : options, keys);
        const outcomes = new Map(result.partitions.map((outcome) => [outcome.partition, outcome]));
        const answers = result.lookups.map((lookup) => ({
          lookup,
          outcome: outcomes.get(lookup.partition) ?? { partition: lookup.partition, ...(lookup.failure === undefined ? {} : { failure: lookup.failure }) },
        }));
        return forwardRemote(context, options, answers);
      },
      // Buffers are compared by content; latin1 maps bytes 1:1 onto a string.
      { cacheKeyFn: (key) => key.toString('latin1'), maxBatchSize: context.options.maxPageSize },
    );
    context.keyLoaders.set(signature, loader);
  }
  return loader;
}

/**
 * Replaces the answers of keys whose partition another instance hosts (NOT_PRESENT with an
 * owner) by that owner's, one POST per owner (forward-keys.ts); then the keys the owner could
 * not answer (FORWARD_FAILED; NOT_ACTIVE while its task restores; NOT_PRESENT when it no longer,
 * or not yet, hosts the partition — the map here is a rebalance behind), those of owners that
 * failed just now (PeerHealth), and those whose active task here is not running yet (a task
 * just moved here, restoring), by a standby's (KIP-535): the one kept here, else the first
 * other standby host that answers — each answer says it came from a standby, with its lag.
 * A request that was itself forwarded keeps its NOT_PRESENT answers: one hop at most, so no loops.
 */
async function forwardRemote(context: GatewayContext, options: QueryOptions, answers: KeyAnswer[]): Promise<KeyAnswer[]> {
  if (isForwarded(context)) return answers;
  const health = context.options.peer.health;
  const placed = new Map<number, PartitionFailure>();
  const byOwner = new Map<string, number[]>();
  const fallback: number[] = [];
  answers.forEach((answer, index) => {
    const failure = answer.lookup.failure;
    if (failure?.reason !== 'NOT_PRESENT' && failure?.reason !== 'NOT_ACTIVE') return;
    // requireActive: a standby's answer would only be NOT_ACTIVE; the owner's failure stands.
    if (!options.requireActive && (failure.standbyHere === true || failure.standbys !== undefined)) placed.set(index, failure);
    // No owner to ask (not known, or the task is here but not running yet): a standby, if any.
    if (failure.reason === 'NOT_ACTIVE' || failure.owner === undefined || health?.isDown(failure.owner) === true) {
      if (placed.has(index)) fallback.push(index);
      return;
    }
    let list = byOwner.get(failure.owner);
    if (list === undefined) byOwner.set(failure.owner, (list = []));
    list.push(index);
  });
  if (byOwner.size === 0 && fallback.length === 0) return answers;
  const store = readableStore(context, options.store);
  await Promise.all([...byOwner].map(([owner, indexes]) => askOwner(context, owner, store, options, answers, indexes, placed, fallback)));
  if (fallback.length > 0) await answerFromStandbys(context, store, options, answers, fallback, placed);
  return answers;
}

/**
 * One owner's keys, forwarded to it. The keys that have a standby are hedged: when the owner has
 * not answered within forwardHedgeMs — a silent owner (cut off, paused, swamped) would hold the
 * read for its whole forward budget, forwardTimeoutMs plus the bound wait — their standbys are
 * asked as well, and whichever answers first stands, as a client routing by KIP-535's metadata
 * turns to a standby host once the active one stops answering. The forward to the owner runs on
 * either way, so PeerHealth learns whether it answers. Keys the owner could not answer go to
 * `fallback` (their standbys are asked after all owners), or take the hedge's answers.
 */
async function askOwner(
  context: GatewayContext,
  owner: string,
  store: StoreDescriptor,
  options: QueryOptions,
  answers: KeyAnswer[],
  indexes: readonly number[],
  placed: ReadonlyMap<number, PartitionFailure>,
  fallback: number[],
): Promise<void> {
  const fromOwner = forwardToPeer(context, owner, store, options, indexes.map((i) => answers[i]!.lookup));
  const hedged = indexes.filter((i) => placed.has(i));
  const fromStandbys = hedged.length > 0 && (await outlastsHedge(context, fromOwner))
    ? standbyAnswers(context, store, options, answers, hedged, placed)
    : null;
  if (fromStandbys === null) {
    const forwarded = await fromOwner;
    indexes.forEach((i, j) => {
      answers[i] = forwarded[j]!;
      if (placed.has(i) && ownerCouldNotAnswer(forwarded[j]!)) fallback.push(i);
    });
    return;
  }
  const first = await Promise.race([fromOwner.then(() => 'owner' as const), fromStandbys.then(() => 'standbys' as const)]);
  const early = first === 'standbys' ? await fromStandbys : null;
  // The standbys answered first: their answers stand; the other keys wait for the owner.
  const settled = new Set<number>();
  for (const [i, answer] of early ?? []) {
    if (answer.lookup.failure !== undefined) continue;
    answers[i] = answer;
    settled.add(i);
  }
  if (settled.size === indexes.length) return;
  const forwarded = await fromOwner;
  const couldNot = (i: number, j: number): boolean => placed.has(i) && ownerCouldNotAnswer(forwarded[j]!);
  const standby = early ?? (indexes.some(couldNot) ? await fromStandbys : new Map<number, KeyAnswer>());
  // The owner's answer, unless it could not answer and a standby said something (an answer, or a
  // failure of its own such as NOT_UP_TO_BOUND, as the fallback after the owner reports).
  indexes.forEach((i, j) => {
    if (!settled.has(i)) answers[i] = couldNot(i, j) ? standby.get(i) ?? forwarded[j]! : forwarded[j]!;
  });
}

/**
 * True when hedging is on (forwardHedgeMs > 0) and `forward` has not settled within
 * forwardHedgeMs: time to ask another copy as well. The forward runs on either way.
 */
export async function outlastsHedge(context: GatewayContext, forward: Promise<unknown>): Promise<boolean> {
  const hedgeMs = context.options.forwardHedgeMs;
  return hedgeMs > 0 && !(await settlesWithin(forward, hedgeMs));
}

/** True when `promise` settles within `ms`. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(resolve, ms, false)));
  try {
    return await Promise.race([promise.then(() => true, () => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * What the standbys said of the keys at `indexes` (answerFromStandbys on a copy of `answers`):
 * each key a standby answered, or failed with a failure of its own; none when asking them threw
 * (the owner's answer, or failure, then stands).
 */
async function standbyAnswers(
  context: GatewayContext,
  store: StoreDescriptor,
  options: QueryOptions,
  answers: readonly KeyAnswer[],
  indexes: readonly number[],
  placed: ReadonlyMap<number, PartitionFailure>,
): Promise<Map<number, KeyAnswer>> {
  const scratch = answers.slice();
  try {
    await answerFromStandbys(context, store, options, scratch, indexes, placed);
  } catch {
    return new Map();
  }
  return new Map(indexes.filter((i) => scratch[i] !== answers[i]).map((i) => [i, scratch[i]!]));
}

function ownerCouldNotAnswer(answer: KeyAnswer): boolean {
  const reason = answer.lookup.failure?.reason;
  return reason === 'FORWARD_FAILED' || reason === 'NOT_ACTIVE' || reason === 'NOT_PRESENT';
}

/** forwardKeys, noting in PeerHealth whether the peer answered at all. */
async function forwardToPeer(context: GatewayContext, url: string, store: StoreDescriptor, options: QueryOptions, lookups: readonly KeyLookup[]): Promise<KeyAnswer[]> {
  const forwarded = await forwardKeys(url, store, options, lookups.map((l) => l.key), lookups.map((l) => l.partition), context.options.peer);
  notePeer(context, url, forwarded.map((answer) => answer.lookup.failure));
  return forwarded;
}

/** Tells PeerHealth whether the peer at `url` answered at all: down when every one of `failures` is FORWARD_FAILED. */
export function notePeer(context: GatewayContext, url: string, failures: ReadonlyArray<{ readonly reason: string } | undefined>): void {
  const health = context.options.peer.health;
  if (failures.every((failure) => failure?.reason === 'FORWARD_FAILED')) health?.markDown(url);
  else health?.markUp(url);
}

/**
 * The keys at `indexes`, whose owner could not answer, asked of their standbys: the one here in
 * one engine.getMany (standbyFallback), the others' keys of each standby host in one POST, host
 * after host in the placement's order until one answers (four rounds at most). A host silent past
 * forwardHedgeMs is hedged as an owner is: its keys are asked of their next standby host as well
 * (askStandbyHost). A key no standby answers keeps the owner's failure.
 */
async function answerFromStandbys(
  context: GatewayContext,
  store: StoreDescriptor,
  options: QueryOptions,
  answers: KeyAnswer[],
  indexes: readonly number[],
  placed: ReadonlyMap<number, PartitionFailure>,
): Promise<void> {
  const here = indexes.filter((i) => placed.get(i)!.standbyHere === true);
  const pending = indexes.filter((i) => placed.get(i)!.standbyHere !== true);
  const fallbackOptions: QueryOptions = { ...options, standbyFallback: true };
  if (here.length > 0) {
    // Here, a task restoring after a move from the standby that was here may answer as that standby.
    const result = await context.engine.getMany({ ...fallbackOptions, restoringAsStandby: true }, here.map((i) => answers[i]!.lookup.key));
    const outcomes = new Map(result.partitions.map((outcome) => [outcome.partition, outcome]));
    here.forEach((i, j) => {
      const lookup = result.lookups[j]!;
      answers[i] = { lookup, outcome: outcomes.get(lookup.partition) ?? { partition: lookup.partition } };
    });
  }
  const health = context.options.peer.health;
  const hostFrom = (i: number, rank: number): string | undefined =>
    placed.get(i)!.standbys?.find((url, r) => r >= rank && health?.isDown(url) !== true);
  // Keys answered so far: the first answer stands, a hedged host's late one is dropped.
  const answered = new Set<number>();
  const ask = async (host: string, list: readonly number[]): Promise<void> => {
    const forwarded = await forwardToPeer(context, host, store, fallbackOptions, list.map((i) => answers[i]!.lookup));
    list.forEach((i, j) => {
      if (answered.has(i) || forwarded[j]!.lookup.failure?.reason === 'FORWARD_FAILED') return;
      answers[i] = forwarded[j]!;
      answered.add(i);
    });
  };
  for (let round = 0; pending.length > 0 && round < 4; round += 1) {
    const byHost = groupByHost(pending, (i) => hostFrom(i, round));
    if (byHost.size === 0) return;
    await Promise.all([...byHost].map(([host, list]) => {
      // A key's next-ranked host, should this one be slow: the first after it not marked down.
      const nextHost = (i: number): string | undefined => hostFrom(i, placed.get(i)!.standbys!.indexOf(host) + 1);
      return askStandbyHost(context, host, list, ask, answered, nextHost);
    }));
    for (let k = pending.length - 1; k >= 0; k -= 1) if (answered.has(pending[k]!)) pending.splice(k, 1);
  }
}

/**
 * One round's keys of a standby host, asked of it (`ask` takes the answers). When it has not
 * answered within forwardHedgeMs, the keys that have a next standby host (`nextHost`, which skips
 * those PeerHealth marks down) are asked of that host as well, as askOwner hedges a silent owner:
 * else a host cut off would hold the round, and the read, for its whole forward budget while the
 * next could answer. The round goes on once every key is answered or every ask has settled, so a
 * key left for the next round has no ask still running; the slow host's forward runs on in the
 * background, to tell PeerHealth whether it answers, and its late answers are dropped. Once
 * hedged, an ask that rejects (forwardToPeer does not, normally) only leaves its keys unanswered.
 */
async function askStandbyHost(
  context: GatewayContext,
  host: string,
  list: readonly number[],
  ask: (host: string, list: readonly number[]) => Promise<void>,
  answered: ReadonlySet<number>,
  nextHost: (i: number) => string | undefined,
): Promise<void> {
  const fromHost = ask(host, list);
  if (!(await outlastsHedge(context, fromHost))) return fromHost;
  const hedges = [...groupByHost(list, nextHost)].map(([next, keys]) => ask(next, keys));
  if (hedges.length === 0) return fromHost;
  await settledOrDone([fromHost, ...hedges], () => list.every((i) => answered.has(i)));
}

/** `indexes` grouped by the host `hostOf` names for each, leaving out those it names none for. */
export function groupByHost(indexes: readonly number[], hostOf: (i: number) => string | undefined): Map<string, number[]> {
  const byHost = new Map<string, number[]>();
  for (const i of indexes) {
    const host = hostOf(i);
    if (host === undefined) continue;
    let list = byHost.get(host);
    if (list === undefined) byHost.set(host, (list = []));
    list.push(i);
  }
  return byHost;
}

/** Resolves once every one of `promises` has settled, or sooner once `done()` holds after one has; never rejects. */
function settledOrDone(promises: ReadonlyArray<Promise<unknown>>, done: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    let open = promises.length;
    const settle = (): void => {
      open -= 1;
      if (open === 0 || done()) resolve();
    };
    for (const promise of promises) void promise.then(settle, settle);
  });
}
