/**
 * bench/restart-app.ts importing the whole API ('iqgate' rather than 'iqgate/app'), so every
 * module — the GraphQL gateway's included — loads before the runtime starts:
 * `npm run bench:restart -- --app bench/restart-app.ts --app bench/restart-app-full.ts`.
 */
import { defineApp, serdes, StreamsBuilder } from 'iqgate';

export default defineApp({
  topology: () => {
    const builder = new StreamsBuilder();
    builder.table(process.env.RESTART_TOPIC ?? 'restart-input', { store: 'kv', key: serdes.string, value: serdes.string });
    return builder.build();
  },
});
