/**
 * What every resolver gets: the engine, the options, and the request's key loaders.
 */
import DataLoader from 'dataloader';
import type { QueryEngine } from '../query/query-engine.js';
import type { KeyLookup, PartitionOutcome, QueryOptions } from '../query/query-types.js';
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

/** The store `name`, when the caller may read it: STORE_NOT_FOUND, FORBIDDEN otherwise. */
export function readableStore(context: GatewayContext, name: string): StoreDescriptor {
  const store = context.engine.store(name);
  assertCanRead(context.principal, store.name);
  return store;
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
        const result = await context.engine.getMany(options, keys);
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
 * owner) by that owner's, one POST per owner (forward-keys.ts). A request that was itself
 * forwarded keeps its NOT_PRESENT answers: one hop at most, so no loops.
 */
async function forwardRemote(context: GatewayContext, options: QueryOptions, answers: KeyAnswer[]): Promise<KeyAnswer[]> {
  const byOwner = new Map<string, number[]>();
  answers.forEach((answer, index) => {
    const failure = answer.lookup.failure;
    if (failure?.reason !== 'NOT_PRESENT' || failure.owner === undefined) return;
    let list = byOwner.get(failure.owner);
    if (list === undefined) byOwner.set(failure.owner, (list = []));
    list.push(index);
  });
  if (byOwner.size === 0 || isForwarded(context)) return answers;
  const store = readableStore(context, options.store);
  await Promise.all(
    [...byOwner].map(async ([owner, indexes]) => {
      const keys = indexes.map((i) => answers[i]!.lookup.key);
      const partitions = indexes.map((i) => answers[i]!.lookup.partition);
      const forwarded = await forwardKeys(owner, store, options, keys, partitions, context.options.peer);
      indexes.forEach((i, j) => {
        answers[i] = forwarded[j]!;
      });
    }),
  );
  return answers;
}
