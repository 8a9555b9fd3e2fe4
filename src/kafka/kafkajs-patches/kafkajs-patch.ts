/**
 * What one kafkajs patch is (the other files of this folder are one patch each; the entry module
 * `../kafkajs-patches.ts` lists them, installs them at import and checks them in createKafka()),
 * and the two ways a patch reaches kafkajs 2.2.4's internals:
 *
 * - Replacing one of kafkajs' files: Node's CommonJS module cache is seeded with the replacement
 *   before kafkajs is first loaded, so the `require` in kafkajs that would load the file gets
 *   the replacement instead. kafkajs keeps what that `require` returned for good, so this only
 *   works when it runs first — hence the import-order rule of the entry module.
 * - Replacing a method on a prototype of kafkajs (Cluster, BrokerPool, RequestQueue, Encoder):
 *   every instance, earlier or later, then uses it, whatever the load order.
 *
 * kafkajs has no `exports` map, so its `src/` files resolve by path.
 */
import { createRequire, Module } from 'node:module';
import { IqgateError } from '../../errors.js';

export interface KafkajsPatch {
  /** Kebab-case, as errors and tests name the patch. */
  readonly name: string;
  /** Patches kafkajs' internals in this process; a second call changes nothing. */
  install(): void;
  /** Returns when kafkajs uses the patch; otherwise throws INVALID_CONFIG naming the patch. */
  check(): void;
}

/** `require` for kafkajs' internal files (`kafkajs/src/...`). */
export const requireKafkajs = createRequire(import.meta.url);

/**
 * Seeds the module cache so that kafkajs' `require` of `file` returns `replacement`. When kafkajs
 * (or that file) was loaded first, kafkajs already holds the original: the cache is left alone
 * and the patch's check() fails, so createKafka() refuses to run.
 */
export function replaceKafkajsFile(file: string, replacement: unknown): void {
  const target = requireKafkajs.resolve(file);
  const cached = requireKafkajs.cache[target];
  if (cached === undefined) {
    const patched = new Module(target);
    patched.filename = target;
    patched.loaded = true;
    patched.exports = replacement;
    requireKafkajs.cache[target] = patched;
  } else if (cached.exports !== replacement) {
    process.emitWarning(`iqgate: kafkajs was loaded before its patches; ${file} is unpatched (createKafka() will refuse to run)`);
  }
}

/**
 * Whether kafkajs' `require` of `file` returns `replacement`. The cache entry is what every
 * `require` of the file got since it was seeded, and replaceKafkajsFile() seeds only an empty
 * entry, so no part of kafkajs can hold the original while this is true. Resolving does not load.
 */
export function isKafkajsFileReplaced(file: string, replacement: unknown): boolean {
  return requireKafkajs.cache[requireKafkajs.resolve(file)]?.exports === replacement;
}

/** The prototype of the class a kafkajs file exports (`kafkajs/src/cluster` → Cluster's), which a patch's methods replace on. */
export function kafkajsPrototype<T>(file: string): T {
  return (requireKafkajs(file) as { prototype: T }).prototype;
}

/**
 * Puts `replacement` in place of kafkajs' method `name` on `prototype`, unless it is there
 * already, and returns kafkajs' own method the first time (undefined after): `kept ??=
 * replaceMethod(...)` keeps the original across repeated installs.
 */
export function replaceMethod<T extends object, K extends keyof T>(prototype: T, name: K, replacement: T[K]): T[K] | undefined {
  if (prototype[name] === replacement) return undefined;
  const original = prototype[name];
  prototype[name] = replacement;
  return original;
}

/** The error of a check() that found its patch missing. */
export function patchNotInPlace(patch: string, what: string): IqgateError {
  return new IqgateError('INVALID_CONFIG', `iqgate's kafkajs patch ${patch} is not in place: ${what}. Import 'iqgate' `
    + '(its entry module installs the patches) before anything that imports kafkajs, and do not replace kafkajs\' internals after it.',
  { details: { patch } });
}
