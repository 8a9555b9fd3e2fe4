import { describe, expect, it } from 'vitest';
import type { ConsumerStopOptions, TaskProducer } from '../../../src/processing/ports.js';
import type { StreamTask } from '../../../src/processing/stream-task.js';
import { createRuntime, type Runtime, type RuntimeStopOptions } from '../../../src/runtime/runtime.js';
import { createInMemoryStoreEngine } from '../../../src/store/index.js';
import { fakePorts, type FakeBroker } from './fake-kafka.js';
import { send } from './manager-harness.js';
import { brokerWithTopics, countingProcessorTopology, countTopology, refusingDownstreamTopology, waitFor } from './processing-fixture.js';

describe('stopping the runtime', () => {
  it('finishes within stopTimeoutMs when the last commit hangs (broker gone), closing the Kafka clients', async () => {
    const broker = brokerWithTopics(['in', 'out']);
    const ports = fakePorts(broker, 'app');
    // Kafka is gone: every EndTxn hangs the way kafkajs retries against a dead broker.
    const created: TaskProducer[] = [];
    const create = ports.producers.create.bind(ports.producers);
    ports.producers.create = (id) => {
      const producer = create(id);
      producer.commit = () => new Promise<void>(() => undefined);
      created.push(producer);
      return producer;
    };
    let portsClosed = false;
    ports.close = async () => { portsClosed = true; };
    const engine = createInMemoryStoreEngine(); // the caller's: the runtime does not close it
    const runtime = createRuntime({
      brokers: '127.0.0.1:1', applicationId: 'app', logLevel: 'silent', topology: countTopology(),
      ports, storeEngine: engine, commitIntervalMs: 3_600_000, stopTimeoutMs: 300,
    });
    await runtime.start();
    ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    await waitFor(() => runtime.localTasks()[0]?.state === 'RUNNING', 5000, 5);
    send(broker, 'in', 0, 'a', 'x');
    ports.consumer.deliver();
    const task = runtime.localTasks()[0] as StreamTask;
    await waitFor(() => task.hasUncommitted(), 5000, 5);

    const started = Date.now();
    await runtime.stop();
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(runtime.state).toBe('STOPPED');
    expect(Date.now() - started).toBeGreaterThanOrEqual(300); // it did wait for the graceful part first
    expect(broker.calls.at(-1)).toBe('sendOffsets'); // the last commit reached EndTxn, which hangs
    expect(portsClosed).toBe(true);
    expect(created).toHaveLength(1);
    await engine.close();
  });
});

describe('leaving the group on stop', () => {
  /** Runs a runtime on fake ports until `end` stops it; returns what consumer.stop() was asked. */
  async function stopsAsked(options: { leaveGroupOnStop?: boolean }, end: (runtime: Runtime, broker: FakeBroker, ports: ReturnType<typeof fakePorts>) => Promise<void>, topology = countTopology()): Promise<unknown[]> {
    const broker = brokerWithTopics(['in', 'out']);
    const ports = fakePorts(broker, 'app');
    const asked: unknown[] = [];
    const consumerStop = ports.consumer.stop.bind(ports.consumer);
    ports.consumer.stop = async (stopOptions?: ConsumerStopOptions) => {
      asked.push(stopOptions);
      await consumerStop();
    };
    const runtime = createRuntime({
      brokers: '127.0.0.1:1', applicationId: 'app', logLevel: 'silent', topology,
      ports, storeEngine: createInMemoryStoreEngine(), ...options,
    });
    await runtime.start();
    ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    await waitFor(() => runtime.localTasks()[0]?.state === 'RUNNING', 5000, 5);
    await end(runtime, broker, ports);
    return asked;
  }
  const stop = (options?: RuntimeStopOptions) => (runtime: Runtime) => runtime.stop(options);

  it('keeps a static member\'s place by default (a restart takes it back), and leaves when leaveGroupOnStop or stop({ leaveGroup }) says so', async () => {
    expect(await stopsAsked({}, stop())).toEqual([{ leaveGroup: false }]);
    expect(await stopsAsked({ leaveGroupOnStop: true }, stop())).toEqual([{ leaveGroup: true }]);
    expect(await stopsAsked({}, stop({ leaveGroup: true }))).toEqual([{ leaveGroup: true }]);
    expect(await stopsAsked({ leaveGroupOnStop: true }, stop({ leaveGroup: false }))).toEqual([{ leaveGroup: false }]);
  });

  it('never leaves when the runtime fails: a failed instance must not take its instance id\'s current holder out of the group', async () => {
    const failing = countingProcessorTopology((record) => {
      if (record.key === 'boom') throw new Error('boom');
    });
    const asked = await stopsAsked({ leaveGroupOnStop: true }, async (runtime, broker, ports) => {
      send(broker, 'in', 0, 'boom', 'x');
      ports.consumer.deliver();
      await expect(runtime.done).rejects.toMatchObject({ code: 'PROCESSING_FAILED' });
    }, failing);
    expect(asked).toEqual([{ leaveGroup: false }]);
  });
});

describe('stopping or failing while the runtime starts', () => {
  /** A runtime on fake ports whose consumer.run waits for `connected` (a broker slow to answer). */
  function slowConnect(fail?: unknown) {
    const broker = brokerWithTopics(['in', 'out']);
    const ports = fakePorts(broker, 'app');
    let connect!: () => void;
    const connected = new Promise<void>((resolve) => (connect = resolve));
    const run = ports.consumer.run.bind(ports.consumer);
    ports.consumer.run = async (handlers) => {
      await connected;
      if (fail !== undefined) throw fail;
      return run(handlers);
    };
    const engine = createInMemoryStoreEngine();
    const runtime = createRuntime({ brokers: '127.0.0.1:1', applicationId: 'app', logLevel: 'silent', topology: countTopology(), ports, storeEngine: engine, commitIntervalMs: 50 });
    return { runtime, ports, engine, connect };
  }

  it('a stop while the consumer connects ends the start quietly, and the runtime stays STOPPED', async () => {
    const { runtime, engine, connect } = slowConnect();
    const starting = runtime.start();
    await waitFor(() => runtime.state === 'STARTING', 5000, 5);
    const stopping = runtime.stop();
    connect();
    await stopping;
    await expect(starting).resolves.toBeUndefined(); // before: ILLEGAL_STATE_TRANSITION from STOPPED to RUNNING
    expect(runtime.state).toBe('STOPPED');
    await engine.close();
  });

  it('a start that fails once the task manager runs closes it: no commit timer or standby poll outlives it', async () => {
    const failure = Object.assign(new Error('authentication failed'), { code: 'KAFKA_AUTHENTICATION_FAILED' });
    const { runtime, engine, connect } = slowConnect(failure);
    const starting = runtime.start();
    runtime.done.catch(() => undefined);
    await waitFor(() => runtime.state === 'STARTING', 5000, 5);
    connect();
    await expect(starting).rejects.toBe(failure);
    expect(runtime.state).toBe('FAILED');
    const manager = (runtime as unknown as { manager: { state: string } | null }).manager;
    expect(manager?.state).not.toBe('RUNNING');
    await engine.close();
  });
});

describe('a fatal error while the runtime stops', () => {
  it('lets the stop under way finish alone, and done rejects with it', async () => {
    const broker = brokerWithTopics(['in', 'out']);
    const ports = fakePorts(broker, 'app');
    let consumerStops = 0;
    let portsCloses = 0;
    const consumerStop = ports.consumer.stop.bind(ports.consumer);
    ports.consumer.stop = async (options?: ConsumerStopOptions) => {
      consumerStops += 1;
      await consumerStop(options);
    };
    const close = ports.close.bind(ports);
    ports.close = async () => {
      portsCloses += 1;
      await close();
    };
    // Counts go downstream at a cache flush, where key "bad" throws: the last commit's flush, at the stop.
    const engine = createInMemoryStoreEngine({ cacheMaxBytes: 1_000_000 });
    const runtime = createRuntime({
      brokers: '127.0.0.1:1', applicationId: 'app', logLevel: 'silent', topology: refusingDownstreamTopology(),
      ports, storeEngine: engine, commitIntervalMs: 3_600_000, processingErrors: 'fail',
    });
    runtime.done.catch(() => undefined);
    await runtime.start();
    ports.consumer.assign([{ topic: 'in', partition: 0 }]);
    await waitFor(() => runtime.localTasks()[0]?.state === 'RUNNING', 5000, 5);
    send(broker, 'in', 0, 'bad', 'x');
    ports.consumer.deliver();
    const task = runtime.localTasks()[0] as StreamTask;
    await waitFor(() => task.hasUncommitted(), 5000, 5);

    await runtime.stop();
    await expect(runtime.done).rejects.toMatchObject({ code: 'PROCESSING_FAILED' });
    expect(runtime.state).toBe('STOPPED');
    expect([consumerStops, portsCloses]).toEqual([1, 1]);
    await engine.close();
  });
});
