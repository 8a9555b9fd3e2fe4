/**
 * iqgate against a secured Kafka: the test broker's SASL_SSL listener (scripts/kafka/
 * secured-listener.ts: a CA of its own, SCRAM users, the standard authorizer), on both
 * clients. Exactly-once wordcount runs end to end over it; a wrong password, a broker
 * certificate that is not trusted, and a user without ACLs each stop start-up at once with
 * their own code; and the password never reaches the logs, at debug level included.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { produceLines, runWordcount } from '../../../examples/wordcount/index.js';
import { isIqgateError } from '../../../src/errors.js';
import { kafkaSecuritySchema, type KafkaSecurityInput } from '../../../src/kafka/kafka-security.js';
import { balancesAt, sendAccounts } from '../../fixtures/apps/accounts-data.js';
import { createTopicsRetrying, kafkajs, securedBroker, testKafka } from '../../support/kafka.js';
import { startMain, type MainProcess } from '../main/main-process.js';
import { brokers } from '../processing/brokers.js';
import { capturingLogger, convergedCounts, expectedCounts, outputProblems, readOutput, uniqueName, until, wordcountSuite } from '../processing/wordcount-harness.js';
import { postGraphQL } from '../../support/graphql.js';

const LINES = 600;
const SEED = 11;
const secured = securedBroker();

function scram(user: 'admin' | 'app' | 'stranger', password: string, ssl: KafkaSecurityInput['ssl'] = { ca: secured!.caPem }): KafkaSecurityInput {
  return { protocol: 'SASL_SSL', sasl: { mechanism: 'SCRAM-SHA-512', username: user, password }, ...(ssl === undefined ? {} : { ssl }) };
}

describe.skipIf(secured === undefined).each(['librdkafka', 'kafkajs'] as const)('iqgate on a SASL_SSL broker with %s', (kafkaClient) => {
  const { kafka, runtimes, createTopics, stateDir } = wordcountSuite();

  it('runs the wordcount exactly once end to end over SASL_SSL (SCRAM-SHA-512), and never logs the password', async () => {
    const input = uniqueName('sec-in');
    const output = uniqueName('sec-out');
    await createTopics([input, output], 2);
    await produceLines({ brokers: brokers(), topic: input, seed: SEED, count: LINES });
    const { logger, text } = capturingLogger('debug');
    const runtime = await runWordcount({
      brokers: secured!.brokers, inputTopic: input, outputTopic: output, applicationId: uniqueName('sec-wc'),
      stateDir: await stateDir('iqgate-sec-'), cacheMaxBytes: 0, kafkaClient, logger, logLevel: 'debug', kafkaLogLevel: 'debug',
      kafkaSecurity: scram('admin', secured!.users.admin),
    });
    runtimes.push(runtime);
    expect(runtime.monitor.kafkaClient()).toBe(kafkaClient);
    const expected = expectedCounts(SEED, LINES);
    await convergedCounts([runtime], expected);
    const updates = await readOutput(kafka, output);
    expect(outputProblems(updates, expected, true)).toEqual([]);
    await runtime.stop();
    const logged = text();
    expect(logged).toContain('SASL_SSL'); // the settings are logged (so the check below could fail) ...
    expect(logged).toContain('SCRAM-SHA-512');
    expect(logged).not.toContain(secured!.users.admin); // ... their secret never
  });

  const refusals: Array<[string, () => KafkaSecurityInput, string]> = [
    ['a wrong password', () => scram('admin', 'not-the-password'), 'KAFKA_AUTHENTICATION_FAILED'],
    ['a broker certificate no CA it trusts signed', () => scram('admin', secured!.users.admin, {}), 'KAFKA_TLS_FAILED'],
    // The stranger may see the input topic (DESCRIBE, granted below) but nothing more. Without
    // DESCRIBE, Kafka hides the topic altogether: that reads as TOPIC_NOT_FOUND, retried.
    ['a user whose ACLs do not cover its topics', () => scram('stranger', secured!.users.stranger), 'KAFKA_AUTHORIZATION_FAILED'],
  ];
  it.each(refusals)('stops start-up at once on %s, with its code and nothing consumed', async (_what, security, code) => {
    const input = uniqueName('sec-bad-in');
    await createTopics([input, uniqueName('sec-bad-out')], 1);
    await produceLines({ brokers: brokers(), topic: input, seed: SEED, count: 10 });
    const applicationId = uniqueName('sec-bad');
    const admin = kafka.admin();
    await admin.connect();
    await admin.createAcls({
      acl: [{
        resourceType: kafkajs.AclResourceTypes.TOPIC, resourceName: input, resourcePatternType: kafkajs.ResourcePatternTypes.LITERAL,
        principal: 'User:stranger', host: '*', operation: kafkajs.AclOperationTypes.DESCRIBE, permissionType: kafkajs.AclPermissionTypes.ALLOW,
      }],
    });
    const { logger, text } = capturingLogger('debug');
    const started = Date.now();
    const failure = await runWordcount({
      brokers: secured!.brokers, inputTopic: input, outputTopic: uniqueName('sec-bad-out'), applicationId, kafkaClient, logger,
      logLevel: 'debug', kafkaSecurity: security(), startupMaxAttempts: 3, startupRetryInitialMs: 2_000,
    }).then(
      (runtime) => {
        runtimes.push(runtime);
        return undefined;
      },
      (error: unknown) => error,
    );
    expect(isIqgateError(failure), String(failure)).toBe(true);
    expect((failure as { code: string }).code, String((failure as Error).message)).toBe(code);
    // Not retried: three attempts 2 s apart would take 6 s.
    expect(Date.now() - started).toBeLessThan(6_000);
    // Nothing consumed: the group committed no offset.
    try {
      const offsets = await admin.fetchOffsets({ groupId: applicationId, topics: [input] });
      expect(offsets.flatMap((t) => t.partitions.map((p) => p.offset))).toEqual(['-1']);
    } finally {
      await admin.disconnect();
    }
    for (const password of Object.values(secured!.users)) expect(text()).not.toContain(password);
  });
});

describe('the Kafka security options', () => {
  it('refuses settings that cannot work, naming what is missing', () => {
    const problems = (input: unknown) => {
      const parsed = kafkaSecuritySchema.safeParse(input);
      return parsed.success ? [] : parsed.error.issues.map((i) => i.message);
    };
    expect(problems({ protocol: 'sasl_ssl' })).toEqual(['SASL_SSL needs a SASL mechanism']);
    expect(problems({ protocol: 'SSL', sasl: { mechanism: 'PLAIN', username: 'u', password: 'p' } })[0]).toContain('SASL settings need protocol');
    expect(problems({ protocol: 'SASL_SSL', sasl: { mechanism: 'SCRAM-SHA-256', username: 'u' } })).toEqual(['SCRAM-SHA-256 needs a username and a password']);
    expect(problems({ protocol: 'SASL_SSL', sasl: { mechanism: 'OAUTHBEARER' } })).toEqual(['OAUTHBEARER needs a token callback']);
    const pem = (label: string) => `-----BEGIN ${label}-----\nMIIB\n-----END ${label}-----\n`;
    expect(problems({ protocol: 'SSL', ssl: { cert: pem('CERTIFICATE') } })).toEqual(['a client certificate needs its key, and a key its certificate']);
    // Not PEM (a keystore, as Java clients take): refused at start, not a broker "unreachable" for ever.
    const notPem = problems({ protocol: 'SSL', ssl: { ca: 'x', cert: pem('CERTIFICATE'), key: '\u00fe\u00ed\u00fe\u00ed keystore bytes' } });
    expect(notPem).toHaveLength(2);
    expect(notPem[0]).toMatch(/^ssl\.ca is not PEM text/);
    expect(notPem[1]).toMatch(/^ssl\.key is not PEM text.*keytool -importkeystore, openssl pkcs12/);
    expect(problems({ protocol: 'SSL', ssl: { ca: pem('CERTIFICATE'), cert: pem('CERTIFICATE'), key: pem('ENCRYPTED PRIVATE KEY'), keyPassword: 'k' } })).toEqual([]);
    expect(problems({ protocol: 'SSL', ssl: { ca: pem('CERTIFICATE'), truststore: 'y' } }).length).toBe(1); // unknown keys are errors, not ignored
    expect(problems({ protocol: 'SSL' })).toEqual([]);
  });
});

/** `iqgate start`'s environment for the SASL_SSL listener as user admin, its password and CA in files under `dir`. */
function securedEnv(dir: string): Record<string, string> {
  const passwordFile = join(dir, 'password');
  writeFileSync(passwordFile, `${secured!.users.admin}\n`);
  const caFile = join(dir, 'ca.pem');
  writeFileSync(caFile, secured!.caPem);
  return {
    KAFKA_BROKERS: secured!.brokers,
    KAFKA_SECURITY_PROTOCOL: 'sasl_ssl',
    KAFKA_SASL_MECHANISM: 'SCRAM-SHA-256',
    KAFKA_SASL_USERNAME: 'admin',
    KAFKA_SASL_PASSWORD_FILE: passwordFile,
    KAFKA_SSL_CA_FILE: caFile,
  };
}

describe.skipIf(secured === undefined)('iqgate start on a SASL_SSL broker', () => {
  it('reads the protocol, the user and the files from the environment, serves the application, and prints no password', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'iqgate-sec-main-'));
    const main: { process?: MainProcess } = {};
    try {
      const app = uniqueName('sec-accounts');
      const topic = `${app}-in`;
      const kafka = testKafka();
      const admin = kafka.admin();
      await admin.connect();
      await createTopicsRetrying(admin, [{ topic, numPartitions: 2 }]);
      await admin.disconnect();
      main.process = startMain({
        ...securedEnv(dir),
        IQGATE_APP: 'test/fixtures/apps/accounts-app.ts',
        ACCOUNTS_APP_ID: app,
        ACCOUNTS_TOPIC: topic,
        IQGATE_STATE_DIR: join(dir, 'state'),
        IQGATE_LOG_LEVEL: 'debug',
      });
      const url = await main.process.graphqlUrl();
      expect(url, main.process.output()).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/graphql$/);
      await sendAccounts(kafka, topic);
      expect(await balancesAt(url!)).toEqual({ alice: { value: { balance: 12 } }, bob: { value: { balance: 5 } } });
      expect(await main.process.stop(), main.process.output()).toBe(0);
      expect(main.process.output()).toContain('SASL_SSL');
      expect(main.process.output()).not.toContain(secured!.users.admin);
    } finally {
      main.process?.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs the default bank demo there too: its setup admin and its transfer feed reach the broker with the same settings', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'iqgate-sec-demo-'));
    const main: { process?: MainProcess } = {};
    try {
      const app = uniqueName('sec-bank');
      main.process = startMain({
        ...securedEnv(dir),
        IQGATE_APP_ID: app,
        IQGATE_INPUT_TOPIC: `${app}-transfers`,
        IQGATE_BANK_TRANSFERS_PER_SECOND: '50',
        IQGATE_STATE_DIR: join(dir, 'state'),
      });
      const url = await main.process.graphqlUrl();
      expect(url, main.process.output()).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/graphql$/);
      // The feed's transfers arrive: the branches' balances show (read uncommitted, so a commit need not be waited for).
      await until('the bank demo\'s balances', async () => {
        const result = await postGraphQL<{ range: { edges: unknown[] } }>(url!, '{ range(store: "balances", first: 5, readCommitted: false) { edges { cursor } } }');
        return result.range.edges.length > 0;
      }, 60_000, 250).catch((error: unknown) => {
        throw new Error(`${String(error)}\n${main.process!.output()}`);
      });
      expect(await main.process.stop(), main.process.output()).toBe(0);
      expect(main.process.output()).not.toContain(secured!.users.admin);
    } finally {
      main.process?.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
