/**
 * FreshTopicReader's guarantee (a caller only ever gets data from a request that started after
 * its call) for look-ups that name their partitions: the committed offsets of opening tasks.
 * Callers that ask while a request for the topic is in flight share the next one, which asks
 * for the union of their partitions — 1000 tasks opening at once still send a handful of
 * requests, and none asks for a partition no task of this instance is opening. Asking for the
 * whole topic instead made each read wait for the other members' transactions (require_stable:
 * the broker holds back an answer while a transaction holds offsets of any partition asked for).
 */
export class FreshPartitionReader {
  private readonly inFlight = new Map<string, Promise<Map<number, number>>>();
  /** Per topic, the request that starts once the one in flight has settled, and who joined it. */
  private readonly next = new Map<string, { readonly partitions: Set<number>; readonly result: Promise<Map<number, number>> }>();

  constructor(private readonly fetch: (topic: string, partitions: readonly number[]) => Promise<Map<number, number>>) {}

  async get(topic: string, partition: number): Promise<number | undefined> {
    let queued = this.next.get(topic);
    if (queued === undefined) {
      const partitions = new Set<number>();
      const running = this.inFlight.get(topic);
      // Whatever is in flight started before this call: wait for it, then fetch (for everyone
      // who joined meanwhile). With nothing in flight the fetch still starts a few microtasks
      // later, so the callers of this same turn share it.
      const result = (running ?? Promise.resolve()).then(() => undefined, () => undefined).then(() => {
        this.next.delete(topic);
        const request = this.fetch(topic, [...partitions].sort((a, b) => a - b));
        this.inFlight.set(topic, request);
        const clear = (): void => {
          if (this.inFlight.get(topic) === request) this.inFlight.delete(topic);
        };
        request.then(clear, clear);
        return request;
      });
      queued = { partitions, result };
      this.next.set(topic, queued);
    }
    queued.partitions.add(partition);
    return (await queued.result).get(partition);
  }
}
