/**
 * The error policies (ErrorPolicy, processing-options.ts) applied to an input record a task
 * gives up on — one it cannot deserialize, or one a processor threw on: `fail` stops the runtime
 * with FatalTaskError; `skip` and `dead-letter` log a warning and leave the record, the latter
 * with its dead letter (dead-letter-record.ts) for the task to send inside its transaction.
 * What happens to the rest of the transaction is the caller's (TaskProcessor).
 */
import type { RecordSource } from '../store/types.js';
import { IqgateError } from '../errors.js';
import { deadLetterRecord } from './dead-letter-record.js';
import type { InputRecord, OutputRecord } from './ports.js';
import type { ErrorPolicy } from './processing-options.js';
import { entryOf } from './record-pack.js';
import type { TaskLogger } from './task-logger.js';

/** A record that the `fail` policy turns into a runtime failure. */
export class FatalTaskError extends IqgateError {}

/** What the error policies need of the task's configuration (StreamTaskConfig). */
export interface TaskErrorPolicyConfig {
  readonly id: string;
  readonly deserializationErrors: ErrorPolicy;
  readonly processingErrors: ErrorPolicy;
  readonly deadLetterTopic: string;
  readonly logger: TaskLogger;
}

/** How the error policies treat a record that failed, by its error code: the policy that applies, and what is said. */
const FAILURES = {
  DECODE_FAILED: { policy: 'deserializationErrors', fatal: 'cannot deserialize', warning: 'undecodable record skipped' },
  PROCESSING_FAILED: { policy: 'processingErrors', fatal: 'processor failed on', warning: 'processor failed: rolling back the transaction and replaying without the record' },
} as const;

/**
 * The error policy for `record`, which failed with `code`: under `fail` a FatalTaskError;
 * otherwise a warning, and the record's dead letter under `dead-letter` (null under `skip`).
 */
export function applyErrorPolicy(config: TaskErrorPolicyConfig, code: keyof typeof FAILURES, record: InputRecord, error: unknown): OutputRecord | null {
  const failure = FAILURES[code];
  const policy = config[failure.policy];
  const fields = { taskId: config.id, topic: record.topic, partition: record.partition, offset: record.offset, ...entryField(record), policy, err: error };
  if (policy === 'fail') {
    throw new FatalTaskError(code, `task ${config.id}: ${failure.fatal} ${record.topic}/${record.partition}@${record.offset}`, { cause: error, details: fields });
  }
  config.logger.warn(fields, failure.warning);
  return policy === 'dead-letter' ? deadLetterRecord(config.deadLetterTopic, record, code, error) : null;
}

function entryField(record: RecordSource): { entry?: number } {
  const entry = entryOf(record);
  return entry === undefined ? {} : { entry };
}
