/**
 * The application bench:restart restarts (IQGATE_APP=bench/restart-app.ts): the input topic
 * RESTART_TOPIC materialized as a table into the store `kv`, string keys and values.
 */
import { defineApp, serdes, StreamsBuilder } from 'iqgate/app';

export default defineApp({
  topology: () => {
    const builder = new StreamsBuilder();
    builder.table(process.env.RESTART_TOPIC ?? 'restart-input', { store: 'kv', key: serdes.string, value: serdes.string });
    return builder.build();
  },
});
