/**
 * Resolvers of the Query type and the object types it returns. Arguments are decoded once
 * (query-args.ts); keys and values are decoded lazily per field, so a value the serde cannot
 * decode fails that one field with DECODE_FAILED while the rest of the result is served.
 */
import { IqgateError } from '../errors.js';
import { encodeCursor } from '../query/cursor.js';
import type { PartitionOutcome } from '../query/query-types.js';
import { isServing, type StoreDescriptor } from '../query/state-provider.js';
import { Position } from '../store/position.js';
import type { Bytes } from '../store/types.js';
import type { GatheredEntry } from './forward-page.js';
import { gatherPage } from './gather-page.js';
import { assertCanRead, canRead } from './gate/principal.js';
import { keyLoader, readableStore, spend, type GatewayContext, type KeyAnswer } from './gateway-context.js';
import { decodeForGraphQL, encodeKey } from './key-codec.js';
import { keyMetadata } from './key-metadata.js';
import { rangeScan, toPageRequest, toQueryOptions, type CommonArgs, type PageArgs } from './query-args.js';
import { lagField } from './lag-field.js';

type Args<T> = T & Record<string, unknown>;

/** Lazily decoded key/value fields: graphql-js calls a function-valued property to resolve it. */
function lazyKey(store: StoreDescriptor, key: Bytes): () => unknown {
  return () => decodeForGraphQL(store.keySerde, key);
}

function lazyValue(store: StoreDescriptor, value: Bytes | undefined | null): () => unknown {
  return () => (value == null ? null : decodeForGraphQL(store.valueSerde, value));
}

/** A value the owner of its partition could not decode: the same error on the same field. */
function failedValue(message: string): () => never {
  return () => {
    throw new IqgateError('DECODE_FAILED', message);
  };
}

function partitionResult(outcome: PartitionOutcome): Record<string, unknown> {
  return {
    partition: outcome.partition,
    position: outcome.position ?? null,
    failure: outcome.failure ?? null,
    executionInfo: outcome.executionInfo ?? null,
    standby: outcome.standby === true,
    lag: lagField(outcome.lag),
    servedBy: outcome.servedBy ?? null,
  };
}

function mergedPosition(outcomes: readonly PartitionOutcome[]): Position | null {
  let merged: Position | null = null;
  for (const outcome of outcomes) {
    if (outcome.position !== undefined) merged = (merged ?? Position.empty()).merge(outcome.position);
  }
  return merged;
}

function keyEntry(store: StoreDescriptor, answer: KeyAnswer): Record<string, unknown> {
  const { lookup } = answer;
  return {
    key: lazyKey(store, lookup.key),
    value: lazyValue(store, lookup.value),
    found: lookup.value !== undefined,
    partition: lookup.partition,
    failure: lookup.failure ?? null,
  };
}

function connection(store: StoreDescriptor, args: PageArgs, scanArgs: { from?: unknown; to?: unknown; prefix?: unknown }, context: GatewayContext) {
  const scan =
    scanArgs.prefix !== undefined
      ? { type: 'prefix' as const, prefix: encodeKey(store.keySerde, scanArgs.prefix, 'prefix') }
      : rangeScan(store, scanArgs.from, scanArgs.to);
  const { request, fingerprint } = toPageRequest(store, scan, args, context.options);
  spend(context, request.size);
  const options = toQueryOptions(args, context.options, context.request);
  // Partitions hosted elsewhere are asked of their owners and merged in (gather-page.ts).
  return gatherPage(context, store, options, request, fingerprint).then((page) => {
    const edges = page.entries.map((entry: GatheredEntry) => ({
      cursor: encodeCursor(fingerprint, entry.key, page.snapshot),
      node: { key: lazyKey(store, entry.key), value: entry.valueError === undefined ? lazyValue(store, entry.value) : failedValue(entry.valueError), partition: entry.partition },
    }));
    const forward = request.direction === 'forward';
    return {
      edges,
      pageInfo: {
        hasNextPage: forward ? page.hasMore : args.before != null,
        // Relay allows "false unless cheap": a cursor given means its entry preceded this page.
        hasPreviousPage: forward ? args.after != null : page.hasMore,
        startCursor: edges[0]?.cursor ?? null,
        endCursor: edges.at(-1)?.cursor ?? null,
      },
      position: mergedPosition(page.partitions),
      partitions: page.partitions.map(partitionResult),
    };
  });
}

export const queryResolvers = {
  Query: {
    instance(_: unknown, __: unknown, context: GatewayContext) {
      const state = context.provider.instanceState();
      return {
        state,
        serving: isServing(state),
        stores: context.provider.stores().length,
        tasks: context.provider.tasks().length,
        kafkaError: context.provider.kafkaError?.() ?? null,
      };
    },
    // The stores a caller may not read are not listed; naming one is FORBIDDEN, as reading it is.
    stores(_: unknown, __: unknown, context: GatewayContext) {
      return context.provider.stores().filter((store) => canRead(context.principal, store.name));
    },
    store(_: unknown, args: { name: string }, context: GatewayContext) {
      assertCanRead(context.principal, args.name); // FORBIDDEN whether or not it exists
      const store = context.provider.store(args.name);
      return store === undefined ? null : readableStore(context, store.name);
    },
    // A task's stores the caller may not read are left out, as `stores` leaves them out.
    tasks(_: unknown, __: unknown, context: GatewayContext) {
      return context.provider.tasks().map((task) => ({
        ...task,
        id: task.taskId,
        lag: lagField(task.lag),
        stores: task.stores.filter((s) => canRead(context.principal, s.storeName)).map((s) => ({ store: s.storeName, partition: s.partition })),
      }));
    },
    async get(_: unknown, args: Args<CommonArgs & { key: unknown }>, context: GatewayContext) {
      const store = readableStore(context, args.store);
      const key = encodeKey(store.keySerde, args.key);
      const answer = await keyLoader(context, toQueryOptions(args, context.options, context.request)).load(key);
      return {
        ...keyEntry(store, answer),
        position: answer.outcome.position ?? null,
        partitions: [partitionResult(answer.outcome)],
      };
    },
    async getMany(_: unknown, args: Args<CommonArgs & { keys: readonly unknown[] }>, context: GatewayContext) {
      const store = readableStore(context, args.store);
      if (args.keys.length > context.options.maxPageSize) {
        throw new IqgateError('PAGE_SIZE_EXCEEDED', `getMany takes at most ${context.options.maxPageSize} keys; got ${args.keys.length}.`, {
          details: { maxPageSize: context.options.maxPageSize },
        });
      }
      spend(context, args.keys.length);
      const keys = args.keys.map((key, i) => encodeKey(store.keySerde, key, `keys[${i}]`));
      const loader = keyLoader(context, toQueryOptions(args, context.options, context.request));
      const answers = await Promise.all(keys.map((key) => loader.load(key)));
      const outcomes = new Map<number, PartitionOutcome>();
      for (const answer of answers) outcomes.set(answer.outcome.partition, answer.outcome);
      const sorted = [...outcomes.values()].sort((a, b) => a.partition - b.partition);
      return { entries: answers.map((answer) => keyEntry(store, answer)), position: mergedPosition(sorted), partitions: sorted.map(partitionResult) };
    },
    keyMetadata(_: unknown, args: { store: string; key: unknown }, context: GatewayContext) {
      return keyMetadata(context, args.store, args.key);
    },
    range(_: unknown, args: Args<PageArgs & { from?: unknown; to?: unknown }>, context: GatewayContext) {
      const store = readableStore(context, args.store);
      return connection(store, args, { from: args.from, to: args.to }, context);
    },
    prefix(_: unknown, args: Args<PageArgs & { prefix: unknown }>, context: GatewayContext) {
      const store = readableStore(context, args.store);
      return connection(store, args, { prefix: args.prefix }, context);
    },
  },
  Store: {
    keySerde: (store: StoreDescriptor) => store.keySerde.name,
    valueSerde: (store: StoreDescriptor) => store.valueSerde.name,
    localPartitions(store: StoreDescriptor, _: unknown, context: GatewayContext) {
      const result: Array<Record<string, unknown>> = [];
      for (let partition = 0; partition < store.partitions; partition++) {
        const local = context.provider.localPartition(store.name, partition);
        if (local === undefined) continue;
        result.push({
          storeName: store.name,
          partition,
          taskId: local.taskId,
          state: local.taskState,
          active: local.active,
          standbyLag: lagField(local.lag),
          committedPosition: () => local.store.committedPosition().copy(),
          uncommittedPosition: () => local.store.uncommittedPosition().copy(),
        });
      }
      return result;
    },
  },
};
