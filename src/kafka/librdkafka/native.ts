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

/**
 * The one command that makes librdkafka load where it does not, with why, for the start-up
 * line and `iqgate --help`. In a service that installs iqgate as a dependency, npm 11 skips
 * iqgate's postinstall unless the service allows it, and the package's binary is then never
 * fetched or built; `npm explore iqgate -- npm run postinstall` runs that script by hand.
 */
export function nativeRemedy(reason: string, moduleUrl: string = import.meta.url): string {
  const command = /\/node_modules\/iqgate\//.test(moduleUrl) ? 'npm explore iqgate -- npm run postinstall' : 'npm run postinstall';
  if (/Cannot find (module|package) '@confluentinc\/kafka-javascript'/.test(reason)) {
    return 'the optional dependency @confluentinc/kafka-javascript is not installed (--omit=optional, or npm could not install it); fix: npm install --include=optional';
  }
  if (/NODE_MODULE_VERSION|was compiled against a different Node/.test(reason)) {
    return `its native binary was built for another Node version; fix: ${command}`;
  }
  return `its native binary is missing or broken (the install script was skipped, or there was no prebuilt binary for this Node and no C/C++ toolchain to build one); fix: ${command}`;
}

/** One line on the native client for `iqgate --help`. */
export function describeLibrdkafka(load = loadLibrdkafka): string {
  const native = load();
  return native.ok ? `librdkafka ${native.version} loads (kafkaClient auto uses it)` : `librdkafka does not load (${native.reason}): ${nativeRemedy(native.reason)}`;
}
