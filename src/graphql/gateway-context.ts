/**
 * What every resolver gets: the engine, the options, and the request's key loaders.
 */
import DataLoader from 'dataloader';
import type { QueryEngine } from '../query/query-engine.js';
import type { KeyLookup, PartitionOutcome, QueryOptions } from '../query/query-types.js';
import type { StateProvider } from '../query/state-provider.js';
import type { Bytes } from '../store/types.js';
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
  /** Yoga's initial context adds the request; its signal aborts when the client goes away. */
  readonly request?: { readonly signal?: AbortSignal };
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
        return result.lookups.map((lookup) => ({
          lookup,
          outcome: outcomes.get(lookup.partition) ?? { partition: lookup.partition, ...(lookup.failure === undefined ? {} : { failure: lookup.failure }) },
        }));
      },
      // Buffers are compared by content; latin1 maps bytes 1:1 onto a string.
      { cacheKeyFn: (key) => key.toString('latin1'), maxBatchSize: context.options.maxPageSize },
    );
    context.keyLoaders.set(signature, loader);
  }
  return loader;
}
