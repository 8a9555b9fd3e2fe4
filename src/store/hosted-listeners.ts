/**
 * Listeners of store partitions opening on this instance: the task manager's StoreRegistry
 * tells them of each partition a task registers, the Runtime passes that on across its
 * managers, and the StaticStateProvider tells of each task added. A change stream missing a
 * partition listens here (StateProvider.onPartitionHosted) instead of looking it up on a timer.
 */

/** Told of one store partition opened here. */
export type HostedListener = (storeName: string, partition: number) => void;

/** A listener's failure is its own: whoever opened the partition goes on. */
export class HostedListeners {
  private readonly listeners = new Set<HostedListener>();

  /** `listener` hears of every partition from now on, until the returned function is called. */
  add(listener: HostedListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  tell(storeName: string, partition: number): void {
    for (const listener of this.listeners) {
      try {
        listener(storeName, partition);
      } catch (error) {
        process.emitWarning(error instanceof Error ? error : new Error(String(error)));
      }
    }
  }
}
