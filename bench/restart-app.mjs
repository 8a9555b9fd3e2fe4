/**
 * bench/restart-app.ts as plain JavaScript, for the compiled iqgate that bench:restart runs by
 * default (`node dist/src/main.js`, which cannot load TypeScript): 'iqgate/app' resolves to
 * dist/ through the package's own exports.
 */
import process from 'node:process';
import { defineApp, serdes, StreamsBuilder } from 'iqgate/app';

export default defineApp({
  topology: () => {
    const builder = new StreamsBuilder();
    builder.table(process.env.RESTART_TOPIC ?? 'restart-input', { store: 'kv', key: serdes.string, value: serdes.string });
    return builder.build();
  },
});
