/** The broker address for processing tests: the global setup's `inject('kafkaBrokers')`, else KAFKA_BROKERS. */
import { inject } from 'vitest';

export function brokers(): string[] {
  let provided: string | undefined;
  try {
    provided = inject('kafkaBrokers');
  } catch {
    provided = undefined;
  }
  const value = provided ?? process.env.KAFKA_BROKERS;
  if (value === undefined || value === '') throw new Error('no broker: run under the integration global setup or set KAFKA_BROKERS');
  return value.split(',');
}
