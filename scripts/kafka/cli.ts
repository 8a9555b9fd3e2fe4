/**
 * `npm run kafka [-- <command>]`
 *   (none) | start   start a broker, print its bootstrap address, stop it on Ctrl-C / SIGTERM
 *   start --background   start it, write .tmp/kafka-broker.json (pid, address) and return
 *   stop                 stop the broker recorded in .tmp/kafka-broker.json, by its PID
 *   fetch                only fetch the broker jars into the cache (used by .ci/run)
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { BrokerError, fetchBrokerJars, KAFKA_VERSION, startBroker, stopBrokerByPid } from './broker.js';

// In the working directory (the repository under `npm run kafka`; the user's project under an
// installed `iqgate kafka`), not beside this file, which may be dist/ or node_modules/.
const stateFile = join(process.cwd(), '.tmp', 'kafka-broker.json');
const log = (line: string): void => console.error(line);

async function main(argv: string[]): Promise<void> {
  const [command = 'start', ...flags] = argv;
  switch (command) {
    case 'fetch': {
      const libs = fetchBrokerJars({ log });
      console.log(`Apache Kafka ${KAFKA_VERSION} jars ready in ${libs}`);
      return;
    }
    case 'start': {
      const background = flags.includes('--background');
      if (background && existsSync(stateFile)) {
        throw new BrokerError('START_FAILED', `a broker is already recorded in ${stateFile}; run \`npm run kafka -- stop\` first`);
      }
      const broker = await startBroker({ log, tiedToProcess: !background });
      console.log(`Kafka ${KAFKA_VERSION} broker ready at ${broker.brokers} (pid ${broker.pid}, started in ${broker.startupMs} ms, log ${broker.logFile})`);
      console.log(`KAFKA_BROKERS=${broker.brokers}`);
      if (background) {
        mkdirSync(dirname(stateFile), { recursive: true });
        writeFileSync(stateFile, JSON.stringify({ pid: broker.pid, brokers: broker.brokers, dataDir: broker.dataDir }, null, 2));
        // Not tied to this process: stopped later by `npm run kafka -- stop` through its PID.
        process.exit(0);
      }
      await new Promise<void>((done) => {
        const shutdown = (): void => {
          log('stopping the Kafka broker ...');
          void broker.stop().then(done);
        };
        process.once('SIGINT', shutdown);
        process.once('SIGTERM', shutdown);
      });
      return;
    }
    case 'stop': {
      if (!existsSync(stateFile)) {
        console.log('no background broker recorded');
        return;
      }
      const state = JSON.parse(readFileSync(stateFile, 'utf8')) as { pid: number; dataDir: string };
      await stopBrokerByPid(state.pid);
      rmSync(state.dataDir, { recursive: true, force: true });
      rmSync(stateFile, { force: true });
      console.log(`stopped the Kafka broker (pid ${state.pid})`);
      return;
    }
    default:
      throw new Error(`unknown command "${command}": use start [--background], stop or fetch`);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof BrokerError) {
    console.error(`iqgate kafka: ${error.code}: ${error.message}`);
  } else {
    console.error(error);
  }
  process.exit(1);
});
