/**
 * Takes docs/dashboard.png: the bank demo on a broker (KAFKA_BROKERS, else a local one started
 * here), served with the dashboard, a third of the transfers aborting, photographed in Debian's
 * Chromium once the chart has a minute of history and the explorer shows a branch whose
 * uncommitted balance differs from its committed one.
 *
 *   npx tsx scripts/docs/screenshot-dashboard.ts [output.png]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import '../../src/kafka/kafkajs-patches.js';
import kafkajs from 'kafkajs';
import { runBank, startBankFeed } from '../../examples/bank/index.js';
import { serve } from '../../src/serve.js';

const output = process.argv[2] ?? 'docs/dashboard.png';
const HISTORY_MS = Number(process.env.SCREENSHOT_HISTORY_MS ?? 60_000);
const stops: Array<() => Promise<unknown>> = [];
const stateDir = mkdtempSync(join(tmpdir(), 'iqgate-screenshot-'));

try {
  let brokers = process.env.KAFKA_BROKERS;
  if (brokers === undefined) {
    const { startBroker } = await import('../kafka/broker.js');
    const broker = await startBroker();
    stops.push(() => broker.stop());
    brokers = broker.brokers;
  }
  const brokerList = brokers.split(',');
  const suffix = Date.now().toString(36);
  const topic = `screenshot-transfers-${suffix}`;
  const admin = new kafkajs.Kafka({ brokers: brokerList, logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 4 }], waitForLeaders: true });
  await admin.disconnect();

  const runtime = await runBank({ brokers: brokerList, applicationId: `bank-${suffix}`, transfersTopic: topic, stateDir, logLevel: 'silent' });
  stops.push(() => runtime.stop());
  const serving = await serve(runtime, { port: 0, logging: false });
  stops.push(() => serving.close());
  const feed = await startBankFeed({ brokers: brokerList, topic, transfersPerSecond: 8, shape: { branches: 6, abortFraction: 0.3 }, seed: 3 });
  stops.push(() => feed.stop());

  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true });
  stops.push(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 });
  await page.goto(serving.url.replace(/\/graphql$/, '/dashboard#store=balances&mode=range'));
  await page.waitForTimeout(HISTORY_MS);
  // A moment where a branch's uncommitted balance differs from its committed one (highlighted).
  await page.waitForSelector('#explorer tr.diff', { timeout: 60_000 });
  await page.screenshot({ path: output, fullPage: true });
  console.log(`wrote ${output}`);
} finally {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  rmSync(stateDir, { recursive: true, force: true });
}
