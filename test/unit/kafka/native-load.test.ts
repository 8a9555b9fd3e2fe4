/**
 * The native Kafka client (@confluentinc/kafka-javascript, librdkafka) loads on the Node running
 * the suite, with TLS and SASL built in. .ci/run sets IQGATE_EXPECT_NATIVE=1 on every Node line
 * it tests (24, 22, 26), where its install builds the client from source when no prebuilt binary
 * downloads; elsewhere (IQGATE_SKIP_NATIVE_KAFKA, no toolchain) kafkajs is the fallback and this
 * is skipped.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { loadLibrdkafka } from '../../../src/kafka/librdkafka/native.js';

describe('the native Kafka client', () => {
  it.runIf(process.env.IQGATE_EXPECT_NATIVE === '1')(`loads on Node ${process.version}, with ssl, sasl_scram and sasl_oauthbearer`, () => {
    const load = loadLibrdkafka();
    expect(load.ok, load.ok ? '' : load.reason).toBe(true);
    const features = (createRequire(import.meta.url)('@confluentinc/kafka-javascript') as { features: string[] }).features;
    for (const feature of ['ssl', 'sasl_scram', 'sasl_plain', 'sasl_oauthbearer']) expect(features).toContain(feature);
  });
});
