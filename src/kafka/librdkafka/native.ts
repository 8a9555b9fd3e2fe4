/**
 * Loads @confluentinc/kafka-javascript (librdkafka), an optional dependency: it is a native
 * module, built or downloaded at install time (scripts/install-kafka-native.mjs), and may be
 * missing or fail to load on a given machine. Loaded once, lazily, with createRequire (it is
 * CommonJS), and only here: src/kafka/librdkafka/ is its only importer.
 */
import { createRequire } from 'node:module';
import type * as Rdkafka from '@confluentinc/kafka-javascript';

export type RdkafkaModule = typeof Rdkafka;

export type NativeLoad =
  | { readonly ok: true; readonly module: RdkafkaModule; readonly version: string }
  | { readonly ok: false; readonly reason: string };

let loaded: NativeLoad | undefined;

/** The module, or why it cannot be used here (not installed, native binary missing or broken). */
export function loadLibrdkafka(): NativeLoad {
  if (loaded !== undefined) return loaded;
  try {
    const module = createRequire(import.meta.url)('@confluentinc/kafka-javascript') as RdkafkaModule;
    loaded = { ok: true, module, version: module.librdkafkaVersion };
  } catch (error) {
    const message = error instanceof Error ? error.message.split('\n')[0] ?? error.message : String(error);
    loaded = { ok: false, reason: message };
  }
  return loaded;
}
