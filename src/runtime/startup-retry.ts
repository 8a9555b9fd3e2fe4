/**
 * The start-up retry loop: a step that fails with a retriable error (an unreachable broker,
 * BROKER_UNAVAILABLE; a missing input topic, TOPIC_NOT_FOUND) is logged with its code and tried
 * again with exponential back-off, until it succeeds, `startupMaxAttempts` runs out, or stop()
 * is requested — which ends the current wait at once. Kept apart from the Runtime, whose
 * start() then reads as the sequence of its steps.
 */
import type { Logger } from 'pino';
import { IqgateError, isIqgateError } from '../errors.js';
import type { RuntimeOptions } from './runtime-options.js';

export class StartupRetry {
  private wakeUp: (() => void) | null = null;

  constructor(
    private readonly options: Pick<RuntimeOptions, 'startupRetryInitialMs' | 'startupRetryMaxMs' | 'startupMaxAttempts'>,
    private readonly logger: Logger,
    private readonly stopRequested: () => boolean,
  ) {}

  /** Runs `fn` until it succeeds; throws its error, coded (KAFKA_ERROR when it had no code), once it is not retried. */
  async run<T>(what: string, fn: () => Promise<T>): Promise<T> {
    let delay = this.options.startupRetryInitialMs;
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await fn();
      } catch (error) {
        const coded = isIqgateError(error) ? error : new IqgateError('KAFKA_ERROR', `${what}: ${String(error)}`, { cause: error, retriable: true });
        const last = this.options.startupMaxAttempts !== undefined && attempt >= this.options.startupMaxAttempts;
        if (!coded.retriable || last || this.stopRequested()) throw coded;
        this.logger.warn({ code: coded.code, attempt, retryInMs: delay, err: coded.message }, `${what} failed; retrying`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, delay);
          this.wakeUp = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wakeUp = null;
        delay = Math.min(this.options.startupRetryMaxMs, delay * 2);
      }
    }
  }

  /** Ends the current back-off wait now (stop() was requested: the loop then gives up). */
  wake(): void {
    this.wakeUp?.();
  }
}
