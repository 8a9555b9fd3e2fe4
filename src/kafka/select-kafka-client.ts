/**
 * Which Kafka client the runtime's ports run on. `auto` (the default) takes librdkafka when its
 * native module loads and the application needs nothing only the kafkajs adapter has, and
 * kafkajs otherwise; an explicit choice that cannot be honoured is INVALID_CONFIG, never a
 * silent fallback. The caller logs `reason` once at start-up.
 *
 * Both adapters run every application: query routing (librdkafka members advertise their URL in
 * their client id, partition-owner-tracker.ts) and co-partitioned sub-topologies (librdkafka's
 * eager `range` assignor then, rdkafka-group-consumer.ts). What differs is how well: a
 * co-partitioned topology on librdkafka rebalances eagerly, as kafkajs always does.
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
  /** Some sub-topology reads several source topics that must be co-assigned (both adapters can). */
  readonly coPartitioned: boolean;
}

export function selectKafkaClient(choice: KafkaClientChoice, needs: KafkaClientNeeds, load = loadLibrdkafka): SelectedKafkaClient {
  if (choice === 'kafkajs') return { client: 'kafkajs', reason: 'kafkaClient is kafkajs' };
  const how = needs.coPartitioned ? '; co-partitioned sub-topologies: range assignor (eager rebalancing)' : '';
  if (choice === 'librdkafka') {
    const native = load();
    if (!native.ok) {
      throw new IqgateError('INVALID_CONFIG', `kafkaClient librdkafka: ${doesNotLoad(native.reason)}; or use kafkaClient kafkajs`);
    }
    return { client: 'librdkafka', module: native.module, reason: `kafkaClient is librdkafka (librdkafka ${native.version})${how}` };
  }
  const native = load();
  if (!native.ok) return { client: 'kafkajs', reason: `auto: ${doesNotLoad(native.reason)}` };
  return { client: 'librdkafka', module: native.module, reason: `auto: librdkafka ${native.version} loaded${how}` };
}

/** Why the native module is not used, and the command that fixes it. */
function doesNotLoad(reason: string): string {
  return `@confluentinc/kafka-javascript does not load (${reason}): ${nativeRemedy(reason)}`;
}
