/**
 * The `changes` subscription: a live feed from query/change-stream.ts (optionally starting with
 * the current state, `initial`), served by yoga over SSE.
 *
 * A feed that ends with an error (PARTITION_REVOKED or STORE_CLOSED when its partition closes
 * here, SUBSCRIPTION_OVERFLOW for a slow reader) rejects its next(); yoga turns that rejection
 * into the stream's last result, `{ errors: [...] }` masked by the gateway's maskError (so it
 * carries `extensions.code`), and then completes the SSE stream
 * (test/unit/graphql/subscription-end.test.ts holds it to that).
 */
import { IqgateError } from '../errors.js';
import { openChangeStream, type ChangeEvent, type ChangeSelector } from '../query/change-stream.js';
import type { Position } from '../store/position.js';
import { readableStore, spend, type GatewayContext } from './gateway-context.js';
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

export const subscriptionResolvers = {
  Subscription: {
    changes: {
      subscribe(_: unknown, args: ChangesArgs, context: GatewayContext): AsyncIterableIterator<{ changes: Record<string, unknown> }> {
        // Served as Server-Sent Events (or multipart). Yoga answers any other Accept with 406
        // after this ran, never reading the stream: its listeners, views and the client's
        // subscription slot stayed taken for good (audit, 2026-12-06). Refused before anything opens.
        const headers = context.request?.headers;
        if (headers !== undefined && !/text\/event-stream|multipart\/mixed/i.test(headers.get('accept') ?? '')) {
          throw new IqgateError('INVALID_ARGUMENT', 'A subscription is served as Server-Sent Events: send it with Accept: text/event-stream.');
        }
        const store = readableStore(context, args.store);
        const selectors = [args.keys != null, args.prefix != null, args.from != null || args.to != null].filter(Boolean).length;
        if (selectors > 1) throw new IqgateError('INVALID_ARGUMENT', 'Subscribe to keys, a prefix or a range (from/to), one at a time.');
        if (args.keys != null && args.keys.length > context.options.maxPageSize) {
          throw new IqgateError('PAGE_SIZE_EXCEEDED', `A subscription watches at most ${context.options.maxPageSize} keys.`);
        }
        if (args.keys != null) spend(context, args.keys.length);
        let selector: ChangeSelector;
        if (args.keys != null) selector = { type: 'keys', keys: args.keys.map((key, i) => encodeKey(store.keySerde, key, `keys[${i}]`)) };
        else if (args.prefix != null) selector = { type: 'prefix', prefix: encodeKey(store.keySerde, args.prefix, 'prefix') };
        else selector = rangeScan(store, args.from, args.to);
        const partitions = partitionsArg(args.partitions, context.options);
        const streamOptions = {
          store: store.name,
          selector,
          readCommitted: args.readCommitted ?? true,
          initial: args.initial ?? false,
          maxBuffered: context.options.maxBufferedEvents,
          ...(args.after == null ? {} : { after: args.after }),
          ...(partitions === undefined ? {} : { partitions }),
        };
        // One of the client's slots until the feed ends, whichever way (done, error, client gone).
        const release = context.options.gate.openSubscription(context.principal);
        let stream: ReturnType<typeof openChangeStream>;
        try {
          stream = openChangeStream(context.provider, streamOptions);
        } catch (error) {
          release();
          throw error;
        }
        const toPayload = (event: ChangeEvent): { changes: Record<string, unknown> } => ({
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
        const mapped: AsyncIterableIterator<{ changes: Record<string, unknown> }> = {
          next: async () => {
            let result: IteratorResult<ChangeEvent>;
            try {
              result = await stream.next();
            } catch (error) {
              release();
              throw error;
            }
            if (result.done === true) {
              release();
              return { value: undefined, done: true };
            }
            return { value: toPayload(result.value), done: false };
          },
          return: async () => {
            release();
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
