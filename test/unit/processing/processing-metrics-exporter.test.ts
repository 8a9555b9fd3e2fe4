import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { buildWordcountTopology } from '../../../examples/wordcount/index.js';
import { registerProcessingMetrics } from '../../../src/runtime/processing-metrics-exporter.js';
import { createRuntime } from '../../../src/runtime/runtime.js';

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
});
