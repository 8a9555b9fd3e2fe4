/**
 * The `changes` subscription: a live feed from query/change-stream.ts (optionally starting with
 * the current state, `initial`), served by yoga over SSE.
 *
 * A feed that ends with an error (its partition revoked or closed, the subscriber too slow)
 * sends that error as its last event — `data: null` with the coded error, as a field error of
 * `changes` — and then completes. Left to reject, the error would reach yoga's SSE stream as a
 * broken connection: the client could not tell why, nor that resubscribing elsewhere helps.
 */
import { IqgateError } from '../errors.js';
import { openChangeStream, type ChangeEvent, type ChangeSelector } from '../query/change-stream.js';
import type { Position } from '../store/position.js';
import type { GatewayContext } from './gateway-context.js';
import { decodeForGraphQL, encodeKey } from './key-codec.js';
import { partitionsArg, rangeScan } from './query-args.js';

interface ChangesArgs {
  readonly store: string;
  readonly keys?: readonly unknown[] | null;
  readonly prefix?: unknown;
  readonly from?: unknown;
  readonly to?: unknown;
  readonly partitions?: readonly number[] | null;
  readonly readCommitted?: boolean | null;
  readonly after?: Position | null;
  readonly initial?: boolean | null;
}

/** One event: the change's fields (resolved lazily), or the error that ends the feed. */
type ChangesPayload = { changes: Record<string, unknown> | Error };

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

export const subscriptionResolvers = {
  Subscription: {
    changes: {
      subscribe(_: unknown, args: ChangesArgs, context: GatewayContext): AsyncIterableIterator<ChangesPayload> {
        const store = context.engine.store(args.store);
        const selectors = [args.keys != null, args.prefix != null, args.from != null || args.to != null].filter(Boolean).length;
        if (selectors > 1) throw new IqgateError('INVALID_ARGUMENT', 'Subscribe to keys, a prefix or a range (from/to), one at a time.');
        if (args.keys != null && args.keys.length > context.options.maxPageSize) {
          throw new IqgateError('PAGE_SIZE_EXCEEDED', `A subscription watches at most ${context.options.maxPageSize} keys.`);
        }
        let selector: ChangeSelector;
        if (args.keys != null) selector = { type: 'keys', keys: args.keys.map((key, i) => encodeKey(store.keySerde, key, `keys[${i}]`)) };
        else if (args.prefix != null) selector = { type: 'prefix', prefix: encodeKey(store.keySerde, args.prefix, 'prefix') };
        else selector = rangeScan(store, args.from, args.to);
        const partitions = partitionsArg(args.partitions, context.options);
        const stream = openChangeStream(context.provider, {
          store: store.name,
          selector,
          readCommitted: args.readCommitted ?? true,
          initial: args.initial ?? false,
          maxBuffered: context.options.maxBufferedEvents,
          ...(args.after == null ? {} : { after: args.after }),
          ...(partitions === undefined ? {} : { partitions }),
        });
        const toPayload = (event: ChangeEvent): ChangesPayload => ({
          changes: {
            key: () => decodeForGraphQL(store.keySerde, event.key),
            value: () => (event.value === null ? null : decodeForGraphQL(store.valueSerde, event.value)),
            deleted: event.value === null,
            partition: event.partition,
            committed: event.committed,
            initial: event.initial,
            position: event.position,
            resumeAfter: event.resumeAfter,
          },
        });
        let ended = false;
        const mapped: AsyncIterableIterator<ChangesPayload> = {
          next: async () => {
            if (ended) return { value: undefined, done: true };
            try {
              const result = await stream.next();
              return result.done === true ? { value: undefined, done: true } : { value: toPayload(result.value), done: false };
            } catch (error) {
              // graphql-js raises an Error that a resolver returns as that field's error: the
              // gateway's masking then gives it its code (anything uncoded is masked).
              ended = true;
              return { value: { changes: asError(error) }, done: false };
            }
          },
          return: async () => {
            await stream.return?.();
            return { value: undefined, done: true };
          },
          [Symbol.asyncIterator]() {
            return mapped;
          },
        };
        return mapped;
      },
    },
  },
};
