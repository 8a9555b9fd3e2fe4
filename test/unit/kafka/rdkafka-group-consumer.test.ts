import { describe, expect, it, vi } from 'vitest';
import type { RdkafkaModule } from '../../../src/kafka/librdkafka/native.js';
import { RdkafkaGroupConsumer } from '../../../src/kafka/librdkafka/rdkafka-group-consumer.js';

const ERR_ASSIGN = -175;
const ERR_REVOKE = -174;

/** A librdkafka KafkaConsumer whose seek() answers `driver.seekErrors` in turn, then `seekError`; the test drives its rebalance callback. */
function fakeRdkafka(seekError: unknown) {
  type Rebalance = (err: { code: number }, assignment: Array<{ topic: string; partition: number }>) => void;
  const driver: {
    rebalance: Rebalance | null; seeks: unknown[]; seekErrors: unknown[]; calls: string[];
    /** What the next consume() calls answer, in turn (then no error, no records). */
    consumeErrors: unknown[];
    /** The adapter's `event.error` listener (client events). */
    clientError: ((err: unknown) => void) | null;
    /** When set, connect() answers once it settles (a broker slow to answer). */
    holdConnect: Promise<void> | null;
    connected: boolean;
  } = { rebalance: null, seeks: [], seekErrors: [], calls: [], consumeErrors: [], clientError: null, holdConnect: null, connected: false };
  class KafkaConsumer {
    constructor(config: { rebalance_cb: Rebalance }) { driver.rebalance = config.rebalance_cb; }
    setDefaultConsumeTimeout(): void {}
    setDefaultIsTimeoutOnlyForFirstMessage(): void {}
    on(event: string, listener: (err: unknown) => void): this {
      if (event === 'event.error') driver.clientError = listener;
      return this;
    }
    connect(_options: unknown, cb: (err: unknown) => void): void {
      if (driver.holdConnect !== null) driver.holdConnect.then(() => { driver.connected = true; cb(null); }, () => undefined);
      else setImmediate(() => cb(null));
    }
    subscribe(): void { driver.calls.push('subscribe'); }
    disconnect(cb: () => void): void { driver.calls.push('disconnect'); setImmediate(cb); }
    consume(_n: number, cb: (err: unknown, messages: unknown[]) => void): void { setTimeout(() => cb(driver.consumeErrors.shift() ?? null, []), 5); } // no records in these tests
    isConnected(): boolean { return driver.connected; }
    assignmentLost(): boolean { return false; }
    commit(offsets?: unknown[]): void { driver.calls.push(offsets === undefined ? 'commit' : `commit:${JSON.stringify(offsets)}`); }
    incrementalAssign(): void { driver.calls.push('incrementalAssign'); }
    incrementalUnassign(): void { driver.calls.push('incrementalUnassign'); }
    queryWatermarkOffsets(_topic: string, partition: number): void { driver.calls.push(`watermarks:${partition}`); }
    pause(toppars: Array<{ partition: number }>): void { driver.calls.push(`pause:${toppars.map((tp) => tp.partition).join(',')}`); }
    resume(toppars: Array<{ partition: number }>): void { driver.calls.push(`resume:${toppars.map((tp) => tp.partition).join(',')}`); }
    seek(toppar: unknown, _timeout: number, cb: (err: unknown) => void): void {
      driver.seeks.push(toppar);
      driver.calls.push('seek');
      const error = driver.seekErrors.length > 0 ? driver.seekErrors.shift() : seekError;
      setImmediate(() => cb(error));
    }
  }
  return { rd: { KafkaConsumer } as unknown as RdkafkaModule, driver };
}

function consumerWithLog(rd: RdkafkaModule, heartbeatIntervalMs?: number) {
  const lines: Array<{ level: string; message: string }> = [];
  const at = (level: string) => (_fields: Record<string, unknown>, message: string): void => { lines.push({ level, message }); };
  const consumer = new RdkafkaGroupConsumer(rd, {
    brokers: ['127.0.0.1:1'], clientId: 'test', groupId: 'g', topics: ['t'],
    ...(heartbeatIntervalMs === undefined ? {} : { heartbeatIntervalMs }),
    log: { error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug') },
  });
  return { consumer, lines };
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('RdkafkaGroupConsumer rebalances', () => {
  it('wakes the fetchers of the partitions it keeps once it gave the revoked ones up (librdkafka held them all back meanwhile)', async () => {
    const { rd, driver } = fakeRdkafka(null);
    const { consumer } = consumerWithLog(rd);
    let release!: () => void;
    await consumer.run({
      onBatch: () => true,
      onAssignment: () => {},
      onRebalancing: () => {},
      onCrash: () => {},
      onRevoked: () => new Promise<void>((resolve) => { release = resolve; }),
    });
    driver.rebalance!({ code: ERR_ASSIGN }, [{ topic: 't', partition: 0 }, { topic: 't', partition: 1 }]);
    consumer.resume([{ topic: 't', partition: 0 }, { topic: 't', partition: 1 }]); // both tasks open
    driver.calls.length = 0;
    driver.rebalance!({ code: ERR_REVOKE }, [{ topic: 't', partition: 1 }]);
    await settle();
    expect(driver.calls).toEqual([]); // the revoked task's last commit is under way
    release();
    await settle();
    expect(driver.calls).toEqual(['incrementalUnassign', 'watermarks:0']);
    await consumer.stop();
  });

  it('pauses what a rebalance adds in one call, and a task manager\'s pause of those partitions again crosses into librdkafka no more', () => {
    const { rd, driver } = fakeRdkafka(null);
    const { consumer } = consumerWithLog(rd);
    driver.rebalance!({ code: ERR_ASSIGN }, [{ topic: 't', partition: 0 }, { topic: 't', partition: 1 }, { topic: 't', partition: 2 }]);
    expect(driver.calls).toEqual(['incrementalAssign', 'pause:0,1,2']);
    driver.calls.length = 0;
    for (const partition of [0, 1, 2]) consumer.pause([{ topic: 't', partition }]); // each new task, before it opens
    expect(driver.calls).toEqual([]);
    consumer.resume([{ topic: 't', partition: 1 }]); // task 1 open
    consumer.pause([{ topic: 't', partition: 0 }, { topic: 't', partition: 1 }, { topic: 'other', partition: 0 }]); // back-pressure, say
    expect(driver.calls.filter((call) => call.startsWith('pause') || call.startsWith('resume'))).toEqual(['resume:1', 'pause:1']);
  });
});

describe('RdkafkaGroupConsumer.seek', () => {
  /** A seek on an assigned partition, answered by librdkafka with `error`. */
  async function seekAnswered(error: Error): Promise<{ driver: ReturnType<typeof fakeRdkafka>['driver']; lines: ReturnType<typeof consumerWithLog>['lines'] }> {
    const { rd, driver } = fakeRdkafka(error);
    const { consumer, lines } = consumerWithLog(rd);
    driver.rebalance!({ code: ERR_ASSIGN }, [{ topic: 't', partition: 0 }]);
    consumer.seek({ topic: 't', partition: 0, offset: 5 });
    await settle();
    return { driver, lines };
  }

  it('does not warn when librdkafka only stopped waiting for the seek\'s result (the binding waits 10 ms; the seek is queued and applies)', async () => {
    const { driver, lines } = await seekAnswered(Object.assign(new Error('Local: Timed out'), { code: -185 }));
    expect(driver.seeks).toHaveLength(1);
    expect(lines.filter((l) => l.level === 'warn')).toEqual([]);
    expect(lines.some((l) => l.level === 'debug' && l.message.includes('seek'))).toBe(true);
  });

  it('warns when librdkafka refused the seek', async () => {
    const { lines } = await seekAnswered(Object.assign(new Error('Local: Unknown partition'), { code: -190 }));
    expect(lines.filter((l) => l.level === 'warn').map((l) => l.message)).toEqual(['librdkafka: seek failed']);
  });

  const fetcherNotStarted = (): Error => Object.assign(new Error('Local: Erroneous state'), { code: -172 });
  const waitFor = async (done: () => boolean): Promise<void> => {
    for (let i = 0; i < 200 && !done(); i += 1) await new Promise((resolve) => setTimeout(resolve, 5));
  };

  it('seeks again while the fetcher has not started (a task open before the committed offset came), and resumes only once the seek applied', async () => {
    const { rd, driver } = fakeRdkafka(null);
    const { consumer, lines } = consumerWithLog(rd);
    driver.rebalance!({ code: ERR_ASSIGN }, [{ topic: 't', partition: 0 }]);
    driver.seekErrors.push(fetcherNotStarted(), fetcherNotStarted());
    driver.calls.length = 0;
    consumer.seek({ topic: 't', partition: 0, offset: 7 });
    consumer.resume([{ topic: 't', partition: 0 }]); // the task opens
    await waitFor(() => driver.calls.includes('resume:0'));
    expect(driver.calls.filter((call) => !call.startsWith('watermarks'))).toEqual(['pause:0', 'seek', 'seek', 'seek', 'resume:0']);
    expect(driver.seeks).toEqual([{ topic: 't', partition: 0, offset: 7 }, { topic: 't', partition: 0, offset: 7 }, { topic: 't', partition: 0, offset: 7 }]);
    expect(lines.filter((l) => l.level === 'warn')).toEqual([]);
  });

  it('does not seek again to a position a later seek replaced, nor for a partition revoked meanwhile', async () => {
    const { rd, driver } = fakeRdkafka(null);
    const { consumer } = consumerWithLog(rd);
    await consumer.run({ onBatch: () => true, onAssignment: () => {}, onRebalancing: () => {}, onCrash: () => {}, onRevoked: async () => {} });
    driver.rebalance!({ code: ERR_ASSIGN }, [{ topic: 't', partition: 0 }, { topic: 't', partition: 1 }]);
    driver.seekErrors.push(fetcherNotStarted(), fetcherNotStarted());
    consumer.seek({ topic: 't', partition: 0, offset: 3 }); // refused
    consumer.seek({ topic: 't', partition: 1, offset: 4 }); // refused, then revoked
    consumer.seek({ topic: 't', partition: 0, offset: 9 }); // applies
    consumer.resume([{ topic: 't', partition: 0 }]);
    driver.rebalance!({ code: ERR_REVOKE }, [{ topic: 't', partition: 1 }]);
    await waitFor(() => driver.calls.includes('resume:0'));
    await new Promise((resolve) => setTimeout(resolve, 50)); // any retry would have gone out
    expect(driver.seeks).toEqual([{ topic: 't', partition: 0, offset: 3 }, { topic: 't', partition: 1, offset: 4 }, { topic: 't', partition: 0, offset: 9 }]);
    await consumer.stop();
  });

  it('wakes the fetchers of partitions resumed one at a time (tasks starting) once per topic and every 8th, not per partition', async () => {
    const { rd, driver } = fakeRdkafka(null);
    const { consumer } = consumerWithLog(rd);
    await consumer.run({ onBatch: () => true, onAssignment: () => {}, onRebalancing: () => {}, onCrash: () => {}, onRevoked: async () => {} });
    const partitions = Array.from({ length: 17 }, (_x, partition) => ({ topic: 't', partition }));
    driver.rebalance!({ code: ERR_ASSIGN }, partitions);
    driver.calls.length = 0;
    for (const tp of partitions) consumer.resume([tp]); // each task resumes its own partition as it opens
    expect(driver.calls.filter((c) => c.startsWith('watermarks'))).toEqual(['watermarks:0', 'watermarks:8', 'watermarks:16']);
    await consumer.stop();
  });
});

describe('RdkafkaGroupConsumer heartbeat clock', () => {
  it('wakes librdkafka\'s main thread four times a heartbeat interval while it runs (it checks for a due heartbeat only when woken), and no more once stopped', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const { rd, driver } = fakeRdkafka(null);
      const { consumer } = consumerWithLog(rd, 200); // a tick every 50 ms
      const wakes = (): number => driver.calls.filter((c) => c === 'commit:[]').length; // never commit(): that is the whole assignment
      vi.advanceTimersByTime(200);
      expect(wakes()).toBe(0); // not before run()
      await consumer.run({ onBatch: () => true, onAssignment: () => {}, onRebalancing: () => {}, onCrash: () => {}, onRevoked: async () => {} });
      vi.advanceTimersByTime(200);
      expect(wakes()).toBe(4);
      expect(driver.calls).not.toContain('commit');
      await consumer.stop();
      vi.advanceTimersByTime(200);
      expect(wakes()).toBe(4);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('RdkafkaGroupConsumer client errors', () => {
  /** The handlers' calls, once the adapter has seen `raise`'s errors. */
  async function reported(raise: (driver: ReturnType<typeof fakeRdkafka>['driver']) => void): Promise<string[]> {
    const { rd, driver } = fakeRdkafka(null);
    const { consumer } = consumerWithLog(rd);
    const seen: string[] = [];
    await consumer.run({
      onBatch: () => true, onAssignment: () => {}, onRebalancing: () => {}, onRevoked: async () => {},
      onCrash: (error) => { seen.push(`crash ${String((error as { code?: unknown }).code)}`); },
      onReconnecting: (error) => { seen.push(`reconnecting ${error.code}`); },
    });
    raise(driver);
    await new Promise((resolve) => setTimeout(resolve, 40)); // a few consume() rounds
    await consumer.stop();
    return seen;
  }

  it('stops for good on librdkafka\'s fatal error, which comes as a consume() error with code -150 and no isFatal (a static member fenced by another with its group.instance.id)', async () => {
    const seen = await reported((driver) => driver.consumeErrors.push({ message: 'Local: Fatal error', code: -150, errno: -150, origin: 'kafka' }));
    expect(seen).toEqual(['crash KAFKA_ERROR']);
  });

  it('stops for good on a client event with the fatal error\'s text (the binding parses no code out of client events)', async () => {
    const seen = await reported((driver) => driver.clientError!({ message: 'fatal error', code: -1, origin: 'local' }));
    expect(seen).toEqual(['crash KAFKA_ERROR']);
  });

  it('reports a broker out of reach as reconnecting, once', async () => {
    const seen = await reported((driver) => {
      driver.clientError!({ message: 'all broker connections are down', code: -1, origin: 'local' });
      driver.consumeErrors.push({ message: 'Local: Broker transport failure', code: -195 });
    });
    expect(seen).toEqual(['reconnecting BROKER_UNAVAILABLE']);
  });
});

describe('RdkafkaGroupConsumer stopped while it connects', () => {
  it('never subscribes or starts its loop after the stop, and disconnects once the connect is through', async () => {
    const { rd, driver } = fakeRdkafka(null);
    let connected!: () => void;
    driver.holdConnect = new Promise<void>((resolve) => (connected = resolve));
    const { consumer } = consumerWithLog(rd);
    const running = consumer.run({ onAssignment: () => undefined, onBatch: () => true, onRebalancing: () => undefined, onCrash: () => undefined });
    const stopping = consumer.stop();
    connected();
    await running;
    await stopping;
    expect(driver.calls.filter((c) => c === 'subscribe' || c === 'disconnect')).toEqual(['disconnect']);
  });
});
