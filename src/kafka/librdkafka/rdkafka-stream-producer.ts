/**
 * The instance's one transactional producer on librdkafka (StreamProducerPort, exactly-once
 * v2). Shape measured in docs/kafka-clients.md: idempotent, acks=all, a short linger so records
 * of one commit cycle share batches, a large local queue, and NO delivery reports — in a
 * transaction a successful commit is the acknowledgement of every record in it, and one
 * JavaScript callback per record was the largest cost of the non-transactional loop.
 *
 * librdkafka's transactional calls are asynchronous (they run on libuv's pool), beginTransaction
 * included, while produce() is a synchronous enqueue. So produce() enqueues straight into
 * librdkafka once the transaction has begun and holds records in memory until then; the next
 * transaction begins as soon as the previous one is settled, so that wait is short and rare.
 *
 * init() always builds a fresh client: after a failed commit librdkafka may be in an abortable
 * or a fatal state (fenced), and InitProducerId on a new client settles both the same way.
 */
import type { KafkaConsumer, Producer } from '@confluentinc/kafka-javascript';
import type { OutputRecord, StreamProducerPort, TopicPartitionOffset } from '../../processing/ports.js';
import type { KafkaLogSink } from '../kafka-client.js';
import { rdkafkaSecurity, type KafkaSecurity } from '../kafka-security.js';
import type { RdkafkaModule } from './native.js';
import { fromRdkafkaError, rdkafkaCode } from './rdkafka-errors.js';

export interface RdkafkaStreamProducerOptions {
  readonly brokers: readonly string[];
  readonly clientId: string;
  /** TLS and SASL (../kafka-security.ts); default plaintext. */
  readonly security?: KafkaSecurity;
  /** librdkafka properties over iqgate's own (the runtime's clientProperties.producer). */
  readonly properties?: Readonly<Record<string, string | number | boolean>>;
  readonly transactionalId: string;
  /** transaction.timeout.ms; default 60 s, as kafkajs'. */
  readonly transactionTimeoutMs?: number;
  /**
   * Time budget of each transactional call (init, offsets, commit, abort), retries included.
   * Default 10 s: past it the commit counts as failed (outcome unknown) and the tasks roll back,
   * e.g. while the broker is away — unless the coordinator answers busy (busyCoordinatorTimeoutMs).
   */
  readonly callTimeoutMs?: number;
  /**
   * How long a transactional call goes on while the coordinator answers that it is busy (see
   * CallBudget). Default 60 s, the Java producer's max.block.ms for the same calls.
   */
  readonly busyCoordinatorTimeoutMs?: number;
  /** The group consumer whose metadata (generation, member id) goes with the offsets (KIP-447). */
  readonly consumer: () => KafkaConsumer;
  readonly log?: KafkaLogSink;
}

type Callback = (err: unknown) => void;

function call(run: (cb: Callback) => void, context: string): Promise<void> {
  return new Promise((resolve, reject) => {
    run((err) => (err ? reject(fromRdkafkaError(err, context)) : resolve()));
  });
}

/** How long a transactional call may take, retries included. */
export interface CallBudget {
  /**
   * Past it the call fails: a broker away, a flush that does not finish. Also each attempt's
   * timeout (librdkafka holds a libuv pool thread for an InitProducerId, EndTxn or abort attempt
   * that long), so an error that is not a busy coordinator is known within it.
   */
  readonly budgetMs: number;
  /**
   * While the coordinator answers that it is busy (CONCURRENT_TRANSACTIONS: the previous
   * transaction's markers are still being written; COORDINATOR_LOAD_IN_PROGRESS), the call goes
   * on up to this long in all: the coordinator is there and will get to it, and failing earlier
   * only trades the wait for a rollback whose re-initialisation waits for it all the same.
   */
  readonly busyBudgetMs: number;
  /**
   * While an attempt times out (librdkafka's _TIMED_OUT, "resume by calling again"), the call
   * goes on up to this long in all; absent, the plain budget. For commit: its flush ends within
   * message.timeout.ms (every outstanding record is then acknowledged or timed out), so a resumed
   * commit learns its verdict — committed, or abort-only — where giving up left it unknown (an
   * abort is refused while a commit is left to resume) and every task of the cut re-opened.
   */
  readonly timedOutBudgetMs?: number;
  /** True once the client was disposed of (a stop, a failed commit's re-initialisation): no attempt more. */
  readonly abandoned?: () => boolean;
}

/**
 * A transactional call, repeated while librdkafka calls its error retriable (CONCURRENT_TRANSACTIONS
 * while the previous transaction's markers are still being written, a commit whose flush did not
 * finish in time: its documented contract is "call again") until the budget is spent — the busy
 * budget while the last answer was a busy coordinator. Measured at 1000 partitions under load
 * (bench:scale): single 5 s attempts failed and rolled back every task; a marker stall of the test
 * broker answered CONCURRENT_TRANSACTIONS for 10.6 s, past the 10 s budget, the abort that followed
 * failed too (the coordinator held no open transaction for it), and every task rolled back and
 * opened again.
 */
export async function callRetrying(run: (timeoutMs: number, cb: Callback) => void, context: string, budget: CallBudget, log?: KafkaLogSink): Promise<void> {
  const started = Date.now();
  const deadline = started + budget.budgetMs;
  const busyDeadline = started + Math.max(budget.budgetMs, budget.busyBudgetMs);
  const timedOutDeadline = started + Math.max(budget.budgetMs, budget.timedOutBudgetMs ?? 0);
  for (let attempt = 0, limit = deadline; ; attempt += 1) {
    const left = Math.max(1, Math.min(budget.budgetMs, limit - Date.now()));
    const attemptStarted = Date.now();
    const error = await new Promise<unknown>((resolve) => run(left, (err) => resolve(err ?? null)));
    if (error === null) {
      if (attempt > 0) log?.debug({ context, attempts: attempt + 1, elapsedMs: Date.now() - started }, 'transactional call succeeded after retries');
      return;
    }
    const code = rdkafkaCode(error);
    const retriable = isRetriableTxnError(error);
    const busy = retriable && code !== undefined && BUSY.has(code);
    limit = busy ? busyDeadline : retriable && code === TIMED_OUT ? timedOutDeadline : deadline;
    const backoff = Math.min(500, 20 * 2 ** attempt, limit - Date.now() - 50);
    // One line per failed attempt: which error, librdkafka's flags, how long the attempt took
    // (librdkafka retries CONCURRENT_TRANSACTIONS itself within the attempt's timeout).
    log?.debug({
      context, attempt: attempt + 1, code, message: error instanceof Error ? error.message : String((error as { message?: unknown }).message),
      ...flagsOf(error), retriable, busy, attemptMs: Date.now() - attemptStarted, elapsedMs: Date.now() - started, limitMs: limit - started,
    }, 'transactional call attempt failed');
    if (!retriable || backoff <= 0 || budget.abandoned?.() === true) throw fromRdkafkaError(error, context);
    await new Promise((resolve) => setTimeout(resolve, backoff));
    if (budget.abandoned?.() === true) throw fromRdkafkaError(error, context);
  }
}

function flagsOf(error: unknown): Record<string, boolean> {
  if (error === null || typeof error !== 'object') return {};
  const { isRetriable, isFatal, isTxnRequiresAbort } = error as { isRetriable?: unknown; isFatal?: unknown; isTxnRequiresAbort?: unknown };
  const flags: Record<string, boolean> = {};
  if (typeof isRetriable === 'boolean') flags.isRetriable = isRetriable;
  if (typeof isFatal === 'boolean') flags.isFatal = isFatal;
  if (typeof isTxnRequiresAbort === 'boolean') flags.isTxnRequiresAbort = isTxnRequiresAbort;
  return flags;
}

/** RD_KAFKA_RESP_ERR__CONFLICT: "Conflicting <call> API call is already in progress". */
const CONFLICT = -173;
/** RD_KAFKA_RESP_ERR__TIMED_OUT: the call's timeout passed; it goes on in the background. */
const TIMED_OUT = -185;

/** The coordinator is busy or moving; the transaction itself is intact. */
const COORDINATOR_BUSY = new Set([
  51, // CONCURRENT_TRANSACTIONS: the previous transaction's markers are still being written
  14, // COORDINATOR_LOAD_IN_PROGRESS
  15, // COORDINATOR_NOT_AVAILABLE
  16, // NOT_COORDINATOR
]);

/**
 * Of those, the answers of a coordinator that is there and busy, which get the busy budget;
 * COORDINATOR_NOT_AVAILABLE and NOT_COORDINATOR are also what a call gets while the coordinator's
 * broker is away, which the plain budget is for.
 */
const BUSY = new Set([51, 14]);

/**
 * librdkafka's own verdict, and also a busy coordinator when librdkafka did not flag the error
 * at all: seen at 1000 partitions under load (bench:scale), an AddOffsetsToTxn answered
 * CONCURRENT_TRANSACTIONS reached JavaScript without a retriable flag and rolled back every task.
 * An error that requires an abort or is fatal is never retried.
 */
export function isRetriableTxnError(error: unknown): boolean {
  if (error === null || typeof error !== 'object') return false;
  const flags = error as { isRetriable?: boolean; isFatal?: boolean; isTxnRequiresAbort?: boolean };
  if (flags.isFatal === true || flags.isTxnRequiresAbort === true) return false;
  // Another transactional call is left to resume (a commit that timed out): librdkafka flags the
  // conflict retriable, but only resuming that call ends it — an abort asked again would wait
  // out its whole budget before the caller learns the outcome is unknown.
  if (rdkafkaCode(error) === CONFLICT) return false;
  if (flags.isRetriable === true) return true;
  const code = rdkafkaCode(error);
  return code !== undefined && COORDINATOR_BUSY.has(code);
}

/** librdkafka's verdict on a failed call: the transaction can only be aborted (and is not fenced). */
function txnRequiresAbort(error: unknown): boolean {
  // callRetrying throws an IqgateError whose cause is librdkafka's error.
  const flags = flagsOf(error !== null && typeof error === 'object' && 'cause' in error ? (error as { cause: unknown }).cause : error);
  return flags.isTxnRequiresAbort === true && flags.isFatal !== true;
}

export class RdkafkaStreamProducer implements StreamProducerPort {
  private producer: Producer | null = null;
  /** Settles when the open transaction has begun; null while none is open. */
  private begun: Promise<void> | null = null;
  private began = false;
  /** Records produced before the transaction had begun. */
  private waiting: OutputRecord[] = [];
  /** A record librdkafka refused at produce(): the transaction cannot commit. */
  private produceError: unknown = null;
  private closed = false;
  /** Why the open transaction's sendOffsets()/commit() failed (null: it did not). */
  private failure: unknown = null;
  /** An abort left to settle after abortAfterFailure() knew its verdict; never rejects. */
  private settling: Promise<void> = Promise.resolve();
  /** The clients being let go, in order (dispose()); never rejects. */
  private disposing: Promise<void> = Promise.resolve();

  constructor(private readonly rd: RdkafkaModule, private readonly options: RdkafkaStreamProducerOptions) {}

  get transactionalId(): string {
    return this.options.transactionalId;
  }

  private get timeout(): number {
    return this.options.callTimeoutMs ?? 10_000;
  }

  /** transaction.timeout.ms, which librdkafka also makes message.timeout.ms (a record's delivery timeout). */
  private get transactionTimeoutMs(): number {
    return this.options.transactionTimeoutMs ?? 60_000;
  }

  /** The budget of a call on `producer`, which a dispose() abandons. */
  private budgetFor(producer: Producer): CallBudget {
    return { budgetMs: this.timeout, busyBudgetMs: this.options.busyCoordinatorTimeoutMs ?? 60_000, abandoned: () => this.producer !== producer };
  }

  async init(): Promise<void> {
    if (this.closed) throw new TypeError('the stream producer is closed');
    await this.dispose();
    // close() may have run meanwhile (an InitProducerId started at once after a failed commit,
    // and a stop): it found no client to dispose of, so none may be made now.
    if (this.closed) throw new TypeError('the stream producer is closed');
    const producer = new this.rd.Producer({
      'bootstrap.servers': this.options.brokers.join(','),
      'client.id': this.options.clientId,
      ...rdkafkaSecurity(this.options.security),
      'transactional.id': this.options.transactionalId,
      'enable.idempotence': true,
      acks: -1,
      'linger.ms': 5,
      'queue.buffering.max.messages': 1_000_000,
      'transaction.timeout.ms': this.transactionTimeoutMs,
      // Java's default partitioner for keyed records (murmur2), which query routing computes too.
      partitioner: 'murmur2_random',
      dr_cb: false,
      ...this.options.properties,
    });
    producer.on('event.error', (err) => this.options.log?.debug({ err, transactionalId: this.transactionalId }, 'librdkafka producer error (retried by librdkafka)'));
    // The binding emits 'error' when an OAUTHBEARER token callback fails (after telling
    // librdkafka, which asks again): with no listener, that is an uncaught error that ends the process.
    (producer as unknown as NodeJS.EventEmitter).on('error', (err: unknown) => this.options.log?.warn({ err, transactionalId: this.transactionalId }, 'OAUTHBEARER token refresh failed (librdkafka asks again)'));
    this.producer = producer;
    const context = `init producer ${this.transactionalId}`;
    // allTopics false: only the brokers' metadata at connect, not every topic's (see the consumer's run()).
    await call((cb) => producer.connect({ timeout: this.timeout, allTopics: false }, (err) => cb(err)), context);
    await callRetrying((timeoutMs, cb) => producer.initTransactions(timeoutMs, cb), context, this.budgetFor(producer), this.options.log);
    if (this.closed) {
      await this.dispose();
      throw new TypeError('the stream producer is closed');
    }
    this.begin();
  }

  private begin(): void {
    const producer = this.producer;
    if (producer === null || this.begun !== null) return;
    this.began = false;
    this.produceError = null;
    this.failure = null;
    this.begun = call((cb) => producer.beginTransaction(cb), `begin transaction ${this.transactionalId}`).then(() => {
      this.began = true;
      const waiting = this.waiting;
      this.waiting = [];
      this.enqueue(producer, waiting);
    });
    // Surfaced by sendOffsets()/commit(); never an unhandled rejection.
    this.begun.catch(() => undefined);
  }

  produce(records: readonly OutputRecord[]): void {
    const producer = this.producer;
    if (producer === null) throw new TypeError('produce() before init()');
    if (this.begun === null) this.begin();
    if (!this.began) {
      for (const record of records) this.waiting.push(record);
      return;
    }
    this.enqueue(producer, records);
  }

  private enqueue(producer: Producer, records: readonly OutputRecord[]): void {
    if (this.produceError !== null) return;
    try {
      for (const r of records) {
        const headers = r.headers === undefined ? undefined : Object.entries(r.headers).map(([key, value]) => ({ [key]: value }));
        producer.produce(r.topic, r.partition ?? null, r.value, r.key ?? undefined, r.timestamp ?? null, undefined, headers);
      }
    } catch (error) {
      this.produceError = error;
    }
  }

  private async open(): Promise<Producer> {
    const producer = this.producer;
    if (producer === null) throw new TypeError('the stream producer is not initialised');
    if (this.begun === null) this.begin();
    await this.begun;
    if (this.produceError !== null) throw fromRdkafkaError(this.produceError, `produce in transaction ${this.transactionalId}`);
    return producer;
  }

  async sendOffsets(offsets: readonly TopicPartitionOffset[]): Promise<void> {
    if (offsets.length === 0) return;
    const producer = await this.open();
    const consumer = this.options.consumer();
    const list = offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: o.offset }));
    await this.failing(callRetrying((timeoutMs, cb) => producer.sendOffsetsToTransaction(list, consumer, timeoutMs, cb), `send offsets in transaction ${this.transactionalId}`, this.budgetFor(producer), this.options.log));
  }

  /** Remembers why a transactional call failed, for abortAfterFailure(). */
  private async failing(call: Promise<void>): Promise<void> {
    try {
      await call;
    } catch (error) {
      this.failure = error;
      throw error;
    }
  }

  async commit(): Promise<void> {
    const producer = await this.open();
    // A failed commit leaves its transaction open (this.begun set): abortAfterFailure() must be
    // able to try the abort. Clearing it here made every failed commit — a record timed out
    // (bench:scale, 1000 partitions), an abortable error — look unabortable, and the committer
    // then rolled back and re-opened every task of the cut. librdkafka itself refuses the abort
    // once EndTxn(commit) may have reached the coordinator (state CommittingTransaction and
    // later, or a commit call left to resume), so a confirmed abort still means nothing of the
    // transaction committed.
    // A flush that times out is resumed until its records' own timeout (message.timeout.ms, the
    // transaction timeout) has surely passed: then the commit has a verdict (CallBudget).
    const budget = { ...this.budgetFor(producer), timedOutBudgetMs: this.timeout + this.transactionTimeoutMs };
    await this.failing(callRetrying((timeoutMs, cb) => producer.commitTransaction(timeoutMs, cb), `commit transaction ${this.transactionalId}`, budget, this.options.log));
    this.begun = null;
    this.begin();
  }

  async abort(): Promise<void> {
    const producer = this.producer;
    const begun = this.begun;
    this.begun = null;
    this.waiting = [];
    if (producer === null || begun === null) return;
    try {
      await begun;
      await call((cb) => producer.abortTransaction(this.timeout, cb), `abort transaction ${this.transactionalId}`);
    } catch {
      // init() settles it: a new InitProducerId aborts whatever is open.
    }
  }

  /**
   * Known outcome when librdkafka confirms the abort, or when the failure itself said the
   * transaction can only be aborted (isTxnRequiresAbort: librdkafka is in its abortable-error
   * state, in which it never sends EndTxn(commit), and the next InitProducerId aborts the
   * transaction if the coordinator still holds it open). Either way the caller initialises the
   * producer again before the next transaction (a fresh client, whatever this one's state).
   */
  async abortAfterFailure(): Promise<boolean> {
    const producer = this.producer;
    const begun = this.begun;
    const requiresAbort = txnRequiresAbort(this.failure);
    this.begun = null;
    this.waiting = [];
    this.failure = null;
    if (producer === null || begun === null) return false;
    // librdkafka refuses to abort after a fatal error (fenced) and once the commit may have
    // reached the coordinator (state CommittingTransaction and later, or a commit call left to
    // resume): the outcome then stays unknown. The abort gets the same budget and retries as
    // the other calls: after a record timed out librdkafka bumps the epoch once EndTxn(abort)
    // is done, which waits for the coordinator to write the abort markers.
    const aborted = begun.then(() => callRetrying((timeoutMs, cb) => producer.abortTransaction(timeoutMs, cb), `abort transaction ${this.transactionalId}`, this.budgetFor(producer), this.options.log));
    if (requiresAbort) {
      // The failure itself ruled the transaction abort-only: nothing of it commits, whatever
      // the abort call answers, so the caller may rewind at once instead of after the abort —
      // bench:scale, 1000 partitions: 7.5 s for the abort markers during a broker stall, after
      // which the tasks processed again everything they had processed meanwhile. The abort
      // settles in the background; dispose() waits for it before the client goes.
      this.settling = aborted.catch((error: unknown) => {
        // bench:scale, 1000 partitions: EndTxn(abort) answered at once, but the coordinator took
        // 22 s to write the abort markers to every partition of the transaction, so the epoch
        // bump (and the call) timed out — with the outcome long known.
        this.options.log?.debug({ err: error, transactionalId: this.transactionalId }, 'abort after a failed commit not confirmed in time; the failure required an abort, so nothing of the transaction commits');
      });
      return true;
    }
    try {
      await aborted;
      return true;
    } catch (error) {
      this.options.log?.debug({ err: error, transactionalId: this.transactionalId }, 'abort after a failed commit was refused: outcome unknown');
      return false;
    }
  }

  /**
   * Lets the client go. Every dispose() waits for the ones before it: a close() while init() is
   * still letting the old client go (its abort settling) must not return before that client is
   * gone.
   */
  private dispose(): Promise<void> {
    const producer = this.producer;
    this.producer = null;
    this.begun = null;
    this.began = false;
    this.waiting = [];
    // An abort still settling in the background (abortAfterFailure): it stops retrying now that
    // its client is abandoned, and the client is not destroyed under its call.
    const settling = this.settling;
    this.disposing = this.disposing.then(async () => {
      if (producer === null) return;
      await settling;
      await new Promise<void>((resolve) => {
        try {
          producer.disconnect(1_000, () => resolve());
        } catch {
          resolve();
        }
      });
    });
    return this.disposing;
  }

  async close(): Promise<void> {
    this.closed = true;
    // A transaction left open would hold back read_committed readers of its partitions (the
    // next owner's) until the broker times it out.
    if (this.begun !== null) await this.abort();
    await this.dispose();
  }
}
