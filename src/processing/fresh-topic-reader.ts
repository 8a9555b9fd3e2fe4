/**
 * Batches per-topic admin look-ups (committed offsets, end offsets) made by many tasks at once
 * into one request per topic — 1000 tasks opening together must not send 1000 OffsetFetches —
 * while guaranteeing freshness: a caller only ever gets data from a request that started after
 * its call. That matters: a task reads its committed offsets only after its InitProducerId has
 * completed the previous owner's transaction (docs/kafkajs-notes.md §4 restore recipe), so an answer
 * fetched before that point could be stale.
 */
export class FreshTopicReader<T> {
  private readonly inFlight = new Map<string, Promise<T>>();
  private readonly next = new Map<string, Promise<T>>();

  constructor(private readonly fetch: (topic: string) => Promise<T>) {}

  get(topic: string): Promise<T> {
    const queued = this.next.get(topic);
    if (queued !== undefined) return queued;
    const running = this.inFlight.get(topic);
    // Whatever is in flight started before this call: wait for it, then fetch again (shared by
    // everyone who asks meanwhile).
    const start = (running ?? Promise.resolve()).then(() => undefined, () => undefined).then(() => {
      this.next.delete(topic);
      const request = this.fetch(topic);
      this.inFlight.set(topic, request);
      const clear = (): void => {
        if (this.inFlight.get(topic) === request) this.inFlight.delete(topic);
      };
      request.then(clear, clear);
      return request;
    });
    this.next.set(topic, start);
    return start;
  }
}
