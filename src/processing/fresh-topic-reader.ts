/**
 * Batches per-topic admin look-ups (committed offsets, end offsets) made by many tasks at once
 * into one request per topic — 1000 tasks opening together must not send 1000 OffsetFetches —
 * while guaranteeing freshness: a caller only ever gets data from a request that started after
 * its call. That matters: a task reads its committed offsets only after its InitProducerId has
 * completed the previous owner's transaction (docs/kafkajs-notes.md §4 restore recipe), so an answer
 * fetched before that point could be stale.
 *
 * A caller may say what it asks for (`ask`, e.g. its partition): the request fetches for the
 * asks of everyone who joined it (FreshPartitionReader).
 */
export class FreshTopicReader<T, A = never> {
  private readonly inFlight = new Map<string, Promise<T>>();
  /** Per topic, the request that starts once the one in flight has settled, and what its callers ask for. */
  private readonly next = new Map<string, { readonly asks: Set<A>; readonly result: Promise<T> }>();

  constructor(private readonly fetch: (topic: string, asks: ReadonlySet<A>) => Promise<T>) {}

  get(topic: string, ask?: A): Promise<T> {
    let queued = this.next.get(topic);
    if (queued === undefined) {
      const asks = new Set<A>();
      const running = this.inFlight.get(topic);
      // Whatever is in flight started before this call: wait for it, then fetch again (shared by
      // everyone who asks meanwhile). With nothing in flight the fetch still starts a few
      // microtasks later, so the callers of this same turn share it.
      const result = (running ?? Promise.resolve()).then(() => undefined, () => undefined).then(() => {
        this.next.delete(topic);
        const request = this.fetch(topic, asks);
        this.inFlight.set(topic, request);
        const clear = (): void => {
          if (this.inFlight.get(topic) === request) this.inFlight.delete(topic);
        };
        request.then(clear, clear);
        return request;
      });
      queued = { asks, result };
      this.next.set(topic, queued);
    }
    if (ask !== undefined) queued.asks.add(ask);
    return queued.result;
  }
}
