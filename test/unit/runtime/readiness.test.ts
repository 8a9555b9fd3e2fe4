import { afterEach, describe, expect, it } from 'vitest';
import { createGateway } from '../../../src/graphql/create-gateway.js';
import type { ChangelogChunk, TopicPartition } from '../../../src/processing/ports.js';
import { changelogTopic } from '../../../src/processing/topic-names.js';
import { createRuntime, type Runtime } from '../../../src/runtime/runtime.js';
import { RuntimeStateProvider } from '../../../src/runtime/runtime-state-provider.js';
import { fakePorts } from '../processing/fake-kafka.js';
import { send } from '../processing/manager-harness.js';
import { brokerWithTopics, countTopology, waitFor } from '../processing/processing-fixture.js';

const runtimes: Runtime[] = [];
afterEach(async () => {
  for (const runtime of runtimes.splice(0)) await runtime.stop();
});

/**
 * A runtime on fake Kafka over two partitions of `in`, whose changelog partition 1 holds a
 * record, so the task of partition 1 restores; `releaseRestore()` lets that restore proceed.
 */
async function startRuntimeWithHeldRestore() {
  const broker = brokerWithTopics(['in', 'out'], 2);
  const changelog = changelogTopic('app', 'counts');
  broker.createTopic(changelog, 2);
  send(broker, changelog, 1, 'a', Buffer.from([0, 0, 0, 3]));
  const ports = fakePorts(broker, 'app');
  let releaseRestore!: () => void;
  const held = new Promise<void>((resolve) => { releaseRestore = resolve; });
  const read = ports.changelogReader.read.bind(ports.changelogReader);
  ports.changelogReader.read = async (tp: TopicPartition, from: number, end: number, onChunk: (chunk: ChangelogChunk) => Promise<void>) => {
    if (tp.partition === 1) await held;
    return read(tp, from, end, onChunk);
  };
  const runtime = createRuntime({ brokers: '127.0.0.1:1', applicationId: 'app', logLevel: 'silent', topology: countTopology(), ports });
  runtimes.push(runtime);
  const provider = new RuntimeStateProvider(runtime);
  const gateway = createGateway({ logging: false, provider });
  const readyStatus = async (): Promise<number> => (await gateway.fetch('http://iqgate.test/ready')).status;
  await runtime.start();
  return { runtime, ports, provider, readyStatus, releaseRestore };
}

const taskStates = (runtime: Runtime): string[] => runtime.localTasks().map((t) => `${t.id}=${t.state}`).sort();

describe('readiness and REBALANCING', () => {
  it('answers /ready 503 until the group assigned partitions and every assigned task is RUNNING, reporting REBALANCING meanwhile', async () => {
    const { runtime, ports, provider, readyStatus, releaseRestore } = await startRuntimeWithHeldRestore();
    expect(runtime.state).toBe('RUNNING');
    expect(provider.instanceState(), 'started, no assignment yet').toBe('REBALANCING');
    expect(await readyStatus()).toBe(503);

    ports.consumer.assign([{ topic: 'in', partition: 0 }, { topic: 'in', partition: 1 }]);
    await waitFor(() => runtime.localTasks().some((t) => t.partition === 0 && t.state === 'RUNNING'));
    expect(taskStates(runtime)).toEqual(['0_0=RUNNING', '0_1=RESTORING']);
    expect(provider.instanceState()).toBe('REBALANCING');
    expect(await readyStatus(), 'a restoring task answers NOT_ACTIVE: no traffic yet').toBe(503);

    releaseRestore();
    await waitFor(() => runtime.localTasks().every((t) => t.state === 'RUNNING'));
    expect(provider.instanceState()).toBe('RUNNING');
    expect(await readyStatus()).toBe(200);
  });

  it('reports REBALANCING from a rebalance\'s start to its assignment, staying ready while every task keeps RUNNING', async () => {
    const { runtime, ports, provider, readyStatus, releaseRestore } = await startRuntimeWithHeldRestore();
    releaseRestore();
    ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    await waitFor(() => provider.instanceState() === 'RUNNING');
    expect(await readyStatus()).toBe(200);

    ports.consumer.handlers?.onRebalancing();
    expect(provider.instanceState()).toBe('REBALANCING');
    expect(await readyStatus(), 'its one task still serves').toBe(200);

    // The new assignment adds partition 1, whose task restores: not ready until it runs.
    ports.consumer.assign([{ topic: 'in', partition: 0 }, { topic: 'in', partition: 1 }]);
    expect(provider.instanceState()).toBe('REBALANCING');
    await waitFor(() => runtime.localTasks().every((t) => t.state === 'RUNNING'));
    expect(provider.instanceState()).toBe('RUNNING');
    expect(await readyStatus()).toBe(200);

    await ports.consumer.handlers?.onRevoked?.([{ topic: 'in', partition: 1 }], false);
    expect(provider.instanceState(), 'partitions revoked: a rebalance is under way').toBe('REBALANCING');
    ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    expect(provider.instanceState()).toBe('RUNNING');
    expect(taskStates(runtime)).toEqual(['0_0=RUNNING']);
  });

  it('is ready with an empty assignment (more instances than partitions)', async () => {
    const { provider, ports, readyStatus } = await startRuntimeWithHeldRestore();
    ports.consumer.assign([]);
    expect(provider.instanceState()).toBe('RUNNING');
    expect(await readyStatus()).toBe(200);
  });
});
