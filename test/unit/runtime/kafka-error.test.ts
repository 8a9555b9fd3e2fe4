import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { IqgateError } from '../../../src/errors.js';
import { registerProcessingMetrics } from '../../../src/runtime/processing-metrics-exporter.js';
import { createRuntime } from '../../../src/runtime/runtime.js';
import { fakePorts } from '../processing/fake-kafka.js';
import { brokerWithTopics, countTopology, waitFor } from '../processing/processing-fixture.js';

describe('runtime.kafkaError', () => {
  it('holds the coded error while the consumer reconnects, stays RUNNING, and clears at the rejoin', async () => {
    const ports = fakePorts(brokerWithTopics(['in', 'out']), 'app');
    const runtime = createRuntime({ brokers: '127.0.0.1:1', applicationId: 'app', logLevel: 'silent', topology: countTopology(), ports });
    const registry = new Registry();
    registerProcessingMetrics(registry, runtime);
    await runtime.start();
    ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    await waitFor(() => runtime.localTasks()[0]?.state === 'RUNNING', 5000, 5);
    expect(runtime.kafkaError).toBeNull();
    expect(await registry.metrics()).toContain('iqgate_kafka_error 0');

    const lost = new IqgateError('BROKER_UNAVAILABLE', 'consumer of group app: Kafka broker unreachable', { retriable: true });
    ports.consumer.handlers?.onReconnecting?.(lost);
    expect(runtime.kafkaError).toBe(lost);
    expect(runtime.state).toBe('RUNNING');
    expect(runtime.localStore('counts', 0)?.taskState).toBe('RUNNING');
    expect(await registry.metrics()).toContain('iqgate_kafka_error 1');

    ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    expect(runtime.kafkaError).toBeNull();
    expect(await registry.metrics()).toContain('iqgate_kafka_error 0');
    await runtime.stop();
  });

  it('says why when the group let the member go (a lost assignment), and clears at the next assignment', async () => {
    const ports = fakePorts(brokerWithTopics(['in', 'out']), 'app');
    const runtime = createRuntime({ brokers: '127.0.0.1:1', applicationId: 'app', logLevel: 'silent', topology: countTopology(), ports });
    await runtime.start();
    ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    await waitFor(() => runtime.localTasks()[0]?.state === 'RUNNING', 5000, 5);
    await ports.consumer.handlers?.onRevoked?.([{ topic: 'in', partition: 0 }], true);
    expect(runtime.kafkaError?.code).toBe('BROKER_UNAVAILABLE');
    expect(runtime.kafkaError?.message).toMatch(/out of the consumer group/);
    expect(runtime.localTasks()[0]?.state).toBe('SUSPENDED');

    ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    expect(runtime.kafkaError).toBeNull();
    await waitFor(() => runtime.localTasks()[0]?.state === 'RUNNING', 5000, 5);
    await runtime.stop();
  });
});
