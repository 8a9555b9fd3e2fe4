import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The package's own name, as application modules and fixtures import it, resolves to the
// sources here (package.json's exports point at dist/, which a fresh clone has not built;
// tsconfig.json's paths do the same for tsc and tsx).
const resolve = {
  alias: [
    { find: /^iqgate$/, replacement: fileURLToPath(new URL('./src/index.ts', import.meta.url)) },
    { find: /^iqgate\/app$/, replacement: fileURLToPath(new URL('./src/app.ts', import.meta.url)) },
  ],
};

// Two projects: `unit` is fast and never touches the network; `integration` runs against
// the real Kafka broker that test/integration/global-setup.ts starts (unless KAFKA_BROKERS
// points to a running one) and real LevelDB in temporary directories.
export default defineConfig({
  test: {
    projects: [
      {
        resolve,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          environment: 'node',
          testTimeout: 20_000,
          // unit first, then integration (vitest needs distinct groups when maxWorkers differ)
          sequence: { groupOrder: 0 },
        },
      },
      {
        resolve,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['test/integration/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          // Integration files share one broker; running them two at a time keeps a
          // 2-core machine responsive and the broker's coordinators unhurried.
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
