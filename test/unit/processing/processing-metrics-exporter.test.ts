import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { buildWordcountTopology } from '../../../examples/wordcount/index.js';
import { registerProcessingMetrics } from '../../../src/runtime/processing-metrics-exporter.js';
import { createRuntime } from '../../../src/runtime/runtime.js';
import { fakePorts } from './fake-kafka.js';
import { brokerWithTopics, countTopology, waitFor } from './processing-fixture.js';

describe('processing metrics for Prometheus', () => {
  it('exposes commit latency, control-queue figures and task counts at scrape time', async () => {
    const runtime = createRuntime({ brokers: '127.0.0.1:1', applicationId: 'metrics', logLevel: 'silent', topology: buildWordcountTopology({ inputTopic: 'in', outputTopic: 'out' }) });
    runtime.metrics.commitLatency.add(12);
    runtime.metrics.commitLatency.add(30);
    const registry = new Registry();
    registerProcessingMetrics(registry, runtime);
    const text = await registry.metrics();
    expect(text).toContain('iqgate_commits_total 2');
    expect(text).toMatch(/iqgate_commit_latency_p99_ms 30/);
    expect(text).toContain('iqgate_control_queue_depth 0');
    expect(text).toContain('# HELP iqgate_tasks Local tasks by lifecycle state.');
  });

  it('shows the bytes held uncommitted between commits', async () => {
    const broker = brokerWithTopics(['in', 'out']);
    const ports = fakePorts(broker, 'held');
    const runtime = createRuntime({ brokers: '127.0.0.1:1', applicationId: 'held', logLevel: 'silent', topology: countTopology(), ports, commitIntervalMs: 3_600_000 });
    const registry = new Registry();
    registerProcessingMetrics(registry, runtime);
    const gauge = async () => Number(/^iqgate_uncommitted_bytes (\d+)$/m.exec(await registry.metrics())?.[1]);
    await runtime.start();
    ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    await waitFor(() => runtime.localTasks()[0]?.state === 'RUNNING', 5000, 5);
    expect(await gauge()).toBe(0);
    for (let i = 0; i < 50; i++) broker.append('in', 0, Buffer.from(`key-${i % 10}`), Buffer.from('x'), null);
    ports.consumer.deliver();
    await waitFor(() => runtime.uncommittedBytes() > 0, 5000, 5);
    expect(await gauge()).toBe(runtime.uncommittedBytes());
    await runtime.stop();
  });
});
