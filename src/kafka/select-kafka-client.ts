/**
 * Which Kafka client the runtime's ports run on. `auto` (the default) takes librdkafka when its
 * native module loads and the application needs nothing only the kafkajs adapter has, and
 * kafkajs otherwise; an explicit choice that cannot be honoured is INVALID_CONFIG, never a
 * silent fallback. The caller logs `reason` once at start-up.
 *
 * What only the kafkajs adapter has, for now: iqgate's own partition assignor, which keeps the
 * source partitions of a multi-topic sub-topology together on one member. librdkafka's
 * assignors are built in (cooperative-sticky here) and take no user data from JavaScript. Query
 * routing runs on both: librdkafka members advertise their URL in their client id instead
 * (partition-owner-tracker.ts).
 */
import { IqgateError } from '../errors.js';
import { loadLibrdkafka, nativeRemedy, type RdkafkaModule } from './librdkafka/native.js';

export { describeLibrdkafka } from './librdkafka/native.js';

export const KAFKA_CLIENTS = ['auto', 'librdkafka', 'kafkajs'] as const;
export type KafkaClientChoice = (typeof KAFKA_CLIENTS)[number];

export type SelectedKafkaClient =
  | { readonly client: 'librdkafka'; readonly module: RdkafkaModule; readonly reason: string }
  | { readonly client: 'kafkajs'; readonly reason: string };

export interface KafkaClientNeeds {
  /** advertisedUrl is set (both adapters route; kept for the reason text and for callers). */
  readonly routing: boolean;
  /** Some sub-topology reads several source topics that must be co-assigned. */
  readonly coPartitioned: boolean;
}

export function selectKafkaClient(choice: KafkaClientChoice, needs: KafkaClientNeeds, load = loadLibrdkafka): SelectedKafkaClient {
  const unsupported = needs.coPartitioned ? 'a sub-topology with several source topics needs iqgate\'s co-partitioning assignor' : null;
  if (choice === 'kafkajs') return { client: 'kafkajs', reason: 'kafkaClient is kafkajs' };
  if (choice === 'librdkafka') {
    if (unsupported !== null) throw new IqgateError('INVALID_CONFIG', `kafkaClient librdkafka: ${unsupported}, which only the kafkajs adapter has; use kafkaClient kafkajs (or auto)`);
    const native = load();
    if (!native.ok) {
      throw new IqgateError('INVALID_CONFIG', `kafkaClient librdkafka: ${doesNotLoad(native.reason)}; or use kafkaClient kafkajs`);
    }
    return { client: 'librdkafka', module: native.module, reason: `kafkaClient is librdkafka (librdkafka ${native.version})` };
  }
  if (unsupported !== null) return { client: 'kafkajs', reason: `auto: ${unsupported}` };
  const native = load();
  if (!native.ok) return { client: 'kafkajs', reason: `auto: ${doesNotLoad(native.reason)}` };
  return { client: 'librdkafka', module: native.module, reason: `auto: librdkafka ${native.version} loaded` };
}

/** Why the native module is not used, and the command that fixes it. */
function doesNotLoad(reason: string): string {
  return `@confluentinc/kafka-javascript does not load (${reason}): ${nativeRemedy(reason)}`;
}
