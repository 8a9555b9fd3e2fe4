/**
 * Letting go of a task's producer whose transaction may still be open: abort, then close, each
 * failure swallowed. Shared by every path that drops a producer (close, a failed open,
 * recovery); whatever the abort could not settle, the next InitProducerId for the same
 * transactionalId does.
 */
import type { TaskProducer } from './ports.js';

export async function discardProducer(producer: TaskProducer | null): Promise<void> {
  if (producer === null) return;
  try {
    await producer.abort();
  } catch {
    // the outcome is settled by the next InitProducerId for this transactionalId
  }
  try {
    await producer.close();
  } catch {
    // already disconnected
  }
}
