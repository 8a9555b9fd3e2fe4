#!/usr/bin/env node
/**
 * The `iqgate` command (package.json `bin`); src/command-line.ts has the commands.
 *
 * libuv's thread pool takes its size from UV_THREADPOOL_SIZE at its first use, so it is set
 * here, before anything is imported: LevelDB, librdkafka's blocking calls (consume, seek,
 * committed offsets, watermark queries) and file I/O all queue on it, and its default of 4
 * threads held a rebalance's wake-ups and task openings back ~1 s at 1000 partitions
 * (docs/engine.md, bench:scale). A value the environment sets is kept.
 */
process.env.UV_THREADPOOL_SIZE ??= '16';
const { runCommandLine } = await import('./command-line.js');

await runCommandLine(process.argv.slice(2));
