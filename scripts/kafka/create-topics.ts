/**
 * admin.createTopics with waitForLeaders, asked again when the broker answers
 * UNKNOWN_TOPIC_OR_PARTITION for a topic it has just created (its metadata not yet updated);
 * kafkajs does not retry that, and it was seen in CI and in the benches on a loaded machine.
 * Then waits until a listing of every topic (what admin.listTopics and partitionCounts read)
 * names them too: once, in CI on Kafka 4.1.1, a client's partitionCounts right after this
 * returned found one of the new topics missing (TOPIC_NOT_FOUND).
 * Shared by the tests (test/support/kafka.ts) and the benches.
 */
import type { Admin, ITopicConfig } from 'kafkajs';

export async function createTopicsRetrying(admin: Admin, topics: ITopicConfig[]): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await admin.createTopics({ waitForLeaders: true, topics });
      await listed(admin, topics.map((t) => t.topic));
      return;
    } catch (error) {
      if ((error as { type?: string }).type !== 'UNKNOWN_TOPIC_OR_PARTITION' || attempt >= 10) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
    }
  }
}

async function listed(admin: Admin, names: readonly string[]): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const all = new Set(await admin.listTopics());
    const missing = names.filter((name) => !all.has(name));
    if (missing.length === 0) return;
    if (Date.now() > deadline) throw new Error(`created topics not listed after 30 s: ${missing.join(', ')}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
