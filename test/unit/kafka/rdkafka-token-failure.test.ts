/**
 * An OAUTHBEARER token callback that fails, on librdkafka: the binding tells librdkafka (which
 * asks for a token again later) and then emits 'error' on the client. With no listener, that
 * emit threw inside the binding's promise handler: an unhandled rejection, which ends a Node
 * process by default. The adapter listens and logs a warning instead. Real librdkafka; the
 * broker address is closed (no broker is needed: the callback runs as the client starts).
 */
import { describe, expect, it } from 'vitest';
import { loadLibrdkafka } from '../../../src/kafka/librdkafka/native.js';
import { RdkafkaGroupConsumer } from '../../../src/kafka/librdkafka/rdkafka-group-consumer.js';
import { kafkaSecuritySchema } from '../../../src/kafka/kafka-security.js';

const native = loadLibrdkafka();

describe('an OAUTHBEARER token callback that fails, on librdkafka', () => {
  it.skipIf(!native.ok)('is a logged warning, not an uncaught error, and librdkafka asks for a token again', async () => {
    const lines: Array<{ level: string; message: string; err?: unknown }> = [];
    const at = (level: string) => (fields: Record<string, unknown>, message: string): void => {
      lines.push({ level, message, err: fields.err });
    };
    let asked = 0;
    const security = kafkaSecuritySchema.parse({
      protocol: 'SASL_PLAINTEXT',
      sasl: {
        mechanism: 'OAUTHBEARER',
        token: async () => {
          asked += 1;
          throw new Error('identity provider down');
        },
      },
    });
    const consumer = new RdkafkaGroupConsumer(native.ok ? native.module : (undefined as never), {
      brokers: ['127.0.0.1:1'], clientId: 'token-test', groupId: 'g', topics: ['t'], security,
      log: { error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug') },
    });
    const running = consumer.run({ onAssignment: () => undefined, onBatch: () => true, onRebalancing: () => undefined, onCrash: () => undefined }).catch((error: unknown) => error);
    try {
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline && !lines.some((l) => l.message.startsWith('OAUTHBEARER token refresh failed'))) await new Promise((resolve) => setTimeout(resolve, 20));
      const warned = lines.find((l) => l.message.startsWith('OAUTHBEARER token refresh failed'));
      expect(warned?.level).toBe('warn');
      expect(String((warned?.err as Error | undefined)?.message)).toContain('identity provider down');
      expect(asked).toBeGreaterThanOrEqual(1);
    } finally {
      await consumer.stop();
      await running;
    }
  }, 20_000);
});
