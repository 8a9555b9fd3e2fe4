/**
 * `npm run bench:store`: the iqgate store stack (LevelDB engine) and raw `level` doing the
 * same work in one run, one line per figure plus the ratio stack/raw, written to
 * bench/results/store.json as [{ name, unit, value }].
 *
 * Workload: 100k keys of 16 bytes, 100-byte values, one store partition. Raw `level` uses
 * the same fixed-width prefixed keys, prebuilt, and the same read primitives the stack uses
 * (chained batches, getSync on a snapshot with pre-normalised options, nextv iterators), so
 * the ratio is the stack's own overhead. Targets (issue 3): commit ≥ 0.8 × raw batch writes,
 * committed reads ≥ 0.8 × raw reads, uncommitted puts ≥ 1,000,000/s.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { openLevelStoreEngine, type KeyValueStorePartition, type TaskStores } from '../src/store/index.js';

const KEYS = 100_000;
const VALUE_BYTES = 100;
const COMMIT_ENTRIES = 10_000;
const GETS = 200_000;
const SCANS = 5;
const SHORT_RANGES = 3_000;

interface Figure {
  name: string;
  unit: string;
  value: number;
}
const figures: Figure[] = [];

function record(name: string, unit: string, value: number): void {
  figures.push({ name, unit, value: Math.round(value * 1000) / 1000 });
  console.log(`${name.padEnd(48)} ${value.toLocaleString('en-US', { maximumFractionDigits: 2 }).padStart(14)} ${unit}`);
}

function pair(name: string, unit: string, stack: number, raw: number, target?: number): void {
  record(`${name} (stack)`, unit, stack);
  record(`${name} (raw level)`, unit, raw);
  record(`${name} ratio stack/raw${target === undefined ? '' : ` (target ≥ ${target})`}`, 'ratio', stack / raw);
}

async function timed(fn: () => Promise<number> | number): Promise<number> {
  const start = process.hrtime.bigint();
  const count = await fn();
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return count / seconds;
}

/** Best of `runs`: the figures are throughput on a shared 2-core machine, noisy downwards. */
async function best(runs: number, fn: () => Promise<number> | number): Promise<number> {
  let top = 0;
  for (let i = 0; i < runs; i++) top = Math.max(top, await timed(fn));
  return top;
}

function key(i: number): Buffer {
  const k = Buffer.alloc(16);
  k.write(`k${String(i).padStart(15, '0')}`, 'latin1');
  return k;
}

const keys = Array.from({ length: KEYS }, (_, i) => key(i));
const values = Array.from({ length: KEYS }, (_, i) => Buffer.alloc(VALUE_BYTES, i % 251));
const prefix = Buffer.from([0, 1, 0, 0, 0, 0, 0, 0, 0, 0]); // the stack's layout for store 1, partition 0
const rawKeys = keys.map((k) => Buffer.concat([prefix, k]));
const randomIndexes = Array.from({ length: GETS }, () => Math.floor(Math.random() * KEYS));
const source = { topic: 'bench-input', partition: 0, offset: 0 };

async function main(): Promise<void> {
  const stackDir = await mkdtemp(join(tmpdir(), 'iqgate-bench-stack-'));
  const rawDir = await mkdtemp(join(tmpdir(), 'iqgate-bench-raw-'));
  const engine = await openLevelStoreEngine({ directory: stackDir });
  const raw = new Level<Buffer, Buffer>(rawDir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await raw.open();
  try {
    const task: TaskStores = await engine.openTask('bench-0', [{ name: 'bench', partition: 0 }]);
    const store: KeyValueStorePartition = task.store('bench');
    let offset = 0;

    // 1. Uncommitted puts: into the record cache (evictions flush into the write batch).
    //    Raw counterpart: puts into a chained batch that is not written yet.
    const stackPuts = await best(3, () => {
      task.abort(); // each run starts from an empty record cache and write batch
      for (let i = 0; i < KEYS; i++) {
        source.offset = offset++;
        store.put(keys[i]!, values[i]!, source);
      }
      return KEYS;
    });
    task.abort();
    const rawPuts = await best(3, async () => {
      const batch = raw.batch();
      for (let i = 0; i < KEYS; i++) batch.put(rawKeys[i]!, values[i]!);
      await batch.close();
      return KEYS;
    });
    pair('uncommitted puts', 'puts/s', stackPuts, rawPuts);
    record('uncommitted puts target (≥ 1,000,000)', 'puts/s', 1_000_000);

    // 2. Commit: COMMIT_ENTRIES entries per commit (cache flush + one atomic batch with
    //    metadata), timed from commit() to its resolution. Raw: chained batch of the same puts.
    let stackCommitSeconds = 0;
    for (let start = 0; start < KEYS; start += COMMIT_ENTRIES) {
      for (let i = start; i < start + COMMIT_ENTRIES; i++) {
        source.offset = offset++;
        store.put(keys[i]!, values[i]!, source);
      }
      const t0 = process.hrtime.bigint();
      await task.commit({ bench: offset });
      stackCommitSeconds += Number(process.hrtime.bigint() - t0) / 1e9;
    }
    const t1 = process.hrtime.bigint();
    for (let start = 0; start < KEYS; start += COMMIT_ENTRIES) {
      const batch = raw.batch();
      for (let i = start; i < start + COMMIT_ENTRIES; i++) batch.put(rawKeys[i]!, values[i]!);
      await batch.write();
    }
    const rawCommitSeconds = Number(process.hrtime.bigint() - t1) / 1e9;
    pair('commit', 'entries/s', KEYS / stackCommitSeconds, KEYS / rawCommitSeconds, 0.8);

    // 3. Committed gets: view({ readCommitted: true }).get, random keys, one snapshot.
    //    Raw: getSync on a snapshot with pre-normalised options.
    const committedView = store.view({ readCommitted: true });
    const stackCommittedGets = await best(2, async () => {
      for (const i of randomIndexes) await committedView.get(keys[i]!);
      return GETS;
    });
    await committedView.close();
    const rawSnapshot = raw.snapshot();
    const rawOptions = { snapshot: rawSnapshot, keyEncoding: 'buffer', valueEncoding: 'buffer' } as const;
    const rawGets = await best(2, async () => {
      for (const i of randomIndexes) await Promise.resolve(raw.getSync(rawKeys[i]!, rawOptions));
      return GETS;
    });
    pair('committed gets', 'gets/s', stackCommittedGets, rawGets, 0.8);

    // 4. Uncommitted gets: 10% of the keys overwritten (cache and write batch), rest committed.
    for (let i = 0; i < KEYS; i += 10) {
      source.offset = offset++;
      store.put(keys[i]!, values[(i + 1) % KEYS]!, source);
      if (i % 20 === 0) task.flush();
    }
    const uncommittedView = store.view({ readCommitted: false });
    const stackUncommittedGets = await best(2, async () => {
      for (const i of randomIndexes) await uncommittedView.get(keys[i]!);
      return GETS;
    });
    pair('uncommitted gets', 'gets/s', stackUncommittedGets, rawGets);
    const processingGets = await best(2, () => {
      for (const i of randomIndexes) store.get(keys[i]!);
      return GETS;
    });
    const rawLatestGets = await best(2, () => {
      for (const i of randomIndexes) raw.getSync(rawKeys[i]!);
      return GETS;
    });
    pair('processing-path gets (sync)', 'gets/s', processingGets, rawLatestGets);

    // 5. Ranges: full scans of the partition and ranges of 100 entries.
    const rawEnd = Buffer.from([0, 1, 0, 0, 0, 0, 0, 0, 0, 1]);
    const rawScan = async (gte: Buffer, lt: Buffer, limit: number): Promise<number> => {
      const iterator = raw.iterator({ gte, lt, limit, ...rawOptions, highWaterMarkBytes: 128 * 1024 });
      let n = 0;
      try {
        for (let chunk = await iterator.nextv(Math.min(1000, limit < 0 ? 1000 : limit)); chunk.length > 0; chunk = await iterator.nextv(1000)) {
          for (const [k] of chunk) n += k.length > 0 ? 1 : 0;
        }
      } finally {
        await iterator.close();
      }
      return n;
    };
    const scanWith = async (readCommitted: boolean): Promise<number> => {
      const view = store.view({ readCommitted });
      let n = 0;
      try {
        for (let s = 0; s < SCANS; s++) for await (const entry of view.range()) n += entry.key.length > 0 ? 1 : 0;
      } finally {
        await view.close();
      }
      return n;
    };
    const rawScanRate = await best(2, async () => {
      let n = 0;
      for (let s = 0; s < SCANS; s++) n += await rawScan(prefix, rawEnd, -1);
      return n;
    });
    pair('committed full-scan range', 'entries/s', await best(2, () => scanWith(true)), rawScanRate);
    pair('uncommitted full-scan range', 'entries/s', await best(2, () => scanWith(false)), rawScanRate);

    const starts = Array.from({ length: SHORT_RANGES }, () => Math.floor(Math.random() * (KEYS - 100)));
    const shortWith = async (readCommitted: boolean): Promise<number> => {
      const view = store.view({ readCommitted });
      let n = 0;
      try {
        for (const i of starts) for await (const entry of view.range({ from: keys[i]!, limit: 100 })) n += entry.key.length > 0 ? 1 : 0;
      } finally {
        await view.close();
      }
      return n;
    };
    const rawShort = await best(2, async () => {
      let n = 0;
      for (const i of starts) n += await rawScan(rawKeys[i]!, rawEnd, 100);
      return n;
    });
    pair('committed ranges of 100', 'entries/s', await best(2, () => shortWith(true)), rawShort);
    pair('uncommitted ranges of 100', 'entries/s', await best(2, () => shortWith(false)), rawShort);

    await uncommittedView.close();
    await rawSnapshot.close();
  } finally {
    await engine.close();
    await raw.close();
    await Promise.all([rm(stackDir, { recursive: true, force: true }), rm(rawDir, { recursive: true, force: true })]);
  }
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(new URL('./results/store.json', import.meta.url), `${JSON.stringify(figures, null, 2)}\n`);
}

await main();
