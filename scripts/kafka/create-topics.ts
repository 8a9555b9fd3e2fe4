/**
 * admin.createTopics with waitForLeaders, asked again when the broker answers
 * UNKNOWN_TOPIC_OR_PARTITION for a topic it has just created (its metadata not yet updated);
 * kafkajs does not retry that, and it was seen in CI and in the benches on a loaded machine.
 * Shared by the tests (test/support/kafka.ts) and the benches.
 */
import type { Admin, ITopicConfig } from 'kafkajs';

export async function createTopicsRetrying(admin: Admin, topics: ITopicConfig[]): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await admin.createTopics({ waitForLeaders: true, topics });
      return;
    } catch (error) {
      if ((error as { type?: string }).type !== 'UNKNOWN_TOPIC_OR_PARTITION' || attempt >= 10) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
    }
  }
}
