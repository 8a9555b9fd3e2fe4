/**
 * How iqgate reaches a secured Kafka: Kafka's `security.protocol` (PLAINTEXT, SSL,
 * SASL_PLAINTEXT, SASL_SSL), a SASL mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, or
 * OAUTHBEARER with a token callback), and TLS material as PEM text (a CA to trust, a client
 * certificate and key). One description, translated here for each client: kafkajs's `ssl` and
 * `sasl` options, and librdkafka's `security.protocol`, `sasl.*` and `ssl.*` properties.
 *
 * The password, the key and its password live only in these objects and the clients' configs;
 * `describeKafkaSecurity` is what may be logged.
 */
import type { ConnectionOptions } from 'node:tls';
import { z } from 'zod';

export const SECURITY_PROTOCOLS = ['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'] as const;
export const SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER'] as const;

export type SecurityProtocol = (typeof SECURITY_PROTOCOLS)[number];

/** An OAUTHBEARER token, as an identity provider hands it out. */
export interface OauthBearerToken {
  readonly value: string;
  /** When it expires, ms since the epoch (librdkafka refreshes at 80 % of its life). Default: an hour from now. */
  readonly expiresAt?: number;
  /** The principal the broker should see (librdkafka needs one). Default: `iqgate`. */
  readonly principal?: string;
}

/** The start of a PEM block: a certificate, a key (PKCS#8, RSA, EC; encrypted or not). */
const PEM_BLOCK = /-----BEGIN [A-Z0-9 ]+-----/;

const upperCase = (value: unknown): unknown => (typeof value === 'string' ? value.toUpperCase() : value);

export const kafkaSecuritySchema = z.strictObject({
  /** As Kafka writes it; any case. */
  protocol: z.preprocess(upperCase, z.enum(SECURITY_PROTOCOLS)),
  sasl: z.strictObject({
    mechanism: z.preprocess(upperCase, z.enum(SASL_MECHANISMS)),
    username: z.string().min(1).optional(),
    password: z.string().min(1).optional(),
    /** OAUTHBEARER: called for a token at connect and before the current one expires. */
    token: z.custom<() => Promise<OauthBearerToken>>((value) => typeof value === 'function').optional(),
  }).optional(),
  ssl: z.strictObject({
    /** PEM: the CA (chain) that signed the brokers' certificates; default: the system's CAs. */
    ca: z.string().min(1).optional(),
    /** PEM client certificate and key, for brokers that authenticate clients by TLS. */
    cert: z.string().min(1).optional(),
    key: z.string().min(1).optional(),
    keyPassword: z.string().min(1).optional(),
    /** Default true; false accepts any broker certificate (tests only). */
    verify: z.boolean().default(true),
  }).optional(),
}).superRefine((security, context) => {
  const usesSasl = security.protocol.startsWith('SASL_');
  if (usesSasl && security.sasl === undefined) context.addIssue({ code: 'custom', message: `${security.protocol} needs a SASL mechanism`, path: ['sasl'] });
  if (!usesSasl && security.sasl !== undefined) context.addIssue({ code: 'custom', message: `SASL settings need protocol SASL_PLAINTEXT or SASL_SSL, not ${security.protocol}`, path: ['sasl'] });
  if (!security.protocol.endsWith('SSL') && security.ssl !== undefined) context.addIssue({ code: 'custom', message: `TLS settings need protocol SSL or SASL_SSL, not ${security.protocol}`, path: ['ssl'] });
  const sasl = security.sasl;
  if (sasl !== undefined) {
    if (sasl.mechanism === 'OAUTHBEARER') {
      if (sasl.token === undefined) context.addIssue({ code: 'custom', message: 'OAUTHBEARER needs a token callback', path: ['sasl', 'token'] });
    } else if (sasl.username === undefined || sasl.password === undefined) {
      context.addIssue({ code: 'custom', message: `${sasl.mechanism} needs a username and a password`, path: ['sasl'] });
    }
  }
  if ((security.ssl?.cert === undefined) !== (security.ssl?.key === undefined)) context.addIssue({ code: 'custom', message: 'a client certificate needs its key, and a key its certificate', path: ['ssl'] });
  // Not PEM (a JKS or PKCS#12 keystore, as Java clients take): kafkajs would fail each
  // handshake as an unreachable broker, retried for ever, and Node takes a CA that is not PEM
  // as an empty trust store; librdkafka refuses it at start. Said here, for both.
  for (const field of ['ca', 'cert', 'key'] as const) {
    const pem = security.ssl?.[field];
    if (pem !== undefined && !PEM_BLOCK.test(pem)) {
      context.addIssue({ code: 'custom', message: `ssl.${field} is not PEM text ("-----BEGIN …"); a JKS or PKCS#12 keystore needs exporting to PEM first (keytool -importkeystore, openssl pkcs12)`, path: ['ssl', field] });
    }
  }
});

export type KafkaSecurityInput = z.input<typeof kafkaSecuritySchema>;
export type KafkaSecurity = z.output<typeof kafkaSecuritySchema>;

/** What may be logged: the protocol, the mechanism and the user, never a secret. */
export function describeKafkaSecurity(security: KafkaSecurity | undefined): Record<string, unknown> {
  if (security === undefined) return { protocol: 'PLAINTEXT' };
  return {
    protocol: security.protocol,
    ...(security.sasl === undefined ? {} : { saslMechanism: security.sasl.mechanism, ...(security.sasl.username === undefined ? {} : { saslUsername: security.sasl.username }) }),
    ...(security.ssl === undefined ? {} : { tlsCa: security.ssl.ca === undefined ? 'system' : 'given', tlsClientCertificate: security.ssl.cert !== undefined, tlsVerify: security.ssl.verify }),
  };
}

/** kafkajs's `ssl` and `sasl` options. */
export function kafkajsSecurity(security: KafkaSecurity | undefined): { ssl?: boolean | ConnectionOptions; sasl?: unknown } {
  if (security === undefined || security.protocol === 'PLAINTEXT') return {};
  const tls = security.protocol.endsWith('SSL');
  const ssl = security.ssl;
  const sslOption: boolean | ConnectionOptions | undefined = !tls ? undefined : ssl === undefined ? true : {
    rejectUnauthorized: ssl.verify,
    ...(ssl.ca === undefined ? {} : { ca: [ssl.ca] }),
    ...(ssl.cert === undefined ? {} : { cert: ssl.cert }),
    ...(ssl.key === undefined ? {} : { key: ssl.key }),
    ...(ssl.keyPassword === undefined ? {} : { passphrase: ssl.keyPassword }),
  };
  const sasl = security.sasl;
  let saslOption: unknown;
  if (sasl !== undefined) {
    if (sasl.mechanism === 'OAUTHBEARER') {
      const token = sasl.token!;
      saslOption = { mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: (await token()).value }) };
    } else {
      saslOption = { mechanism: sasl.mechanism.toLowerCase(), username: sasl.username, password: sasl.password };
    }
  }
  return { ...(sslOption === undefined ? {} : { ssl: sslOption }), ...(saslOption === undefined ? {} : { sasl: saslOption }) };
}

/** librdkafka's properties for `security` (spread into a client's global configuration). */
export function rdkafkaSecurity(security: KafkaSecurity | undefined): Record<string, unknown> {
  if (security === undefined || security.protocol === 'PLAINTEXT') return {};
  const config: Record<string, unknown> = { 'security.protocol': security.protocol.toLowerCase() };
  const ssl = security.ssl;
  if (ssl !== undefined) {
    if (ssl.ca !== undefined) config['ssl.ca.pem'] = ssl.ca;
    if (ssl.cert !== undefined) config['ssl.certificate.pem'] = ssl.cert;
    if (ssl.key !== undefined) config['ssl.key.pem'] = ssl.key;
    if (ssl.keyPassword !== undefined) config['ssl.key.password'] = ssl.keyPassword;
    config['enable.ssl.certificate.verification'] = ssl.verify;
    // librdkafka checks the broker's host name only when asked: as Java clients and Node's TLS do.
    if (ssl.verify) config['ssl.endpoint.identification.algorithm'] = 'https';
  } else if (security.protocol.endsWith('SSL')) {
    config['ssl.endpoint.identification.algorithm'] = 'https';
  }
  const sasl = security.sasl;
  if (sasl !== undefined) {
    config['sasl.mechanisms'] = sasl.mechanism;
    if (sasl.mechanism === 'OAUTHBEARER') {
      const token = sasl.token!;
      config.oauthbearer_token_refresh_cb = async () => {
        const t = await token();
        return { tokenValue: t.value, lifetime: t.expiresAt ?? Date.now() + 3_600_000, principal: t.principal ?? 'iqgate' };
      };
    } else {
      config['sasl.username'] = sasl.username;
      config['sasl.password'] = sasl.password;
    }
  }
  return config;
}
