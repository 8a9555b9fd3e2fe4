/**
 * `iqgate start`'s Kafka security from the environment (src/main.ts's envSchema validates the
 * strings): the protocol, the SASL mechanism and user, and every secret and TLS file by path —
 * a password in a flag or a variable would show in `ps` or a crash dump of the environment.
 */
import { readConfigFile } from './config-file.js';
import { IqgateError } from './errors.js';
import { kafkaSecuritySchema, type KafkaSecurity } from './kafka/kafka-security.js';

export interface KafkaSecurityEnv {
  readonly KAFKA_SECURITY_PROTOCOL?: string | undefined;
  readonly KAFKA_SASL_MECHANISM?: string | undefined;
  readonly KAFKA_SASL_USERNAME?: string | undefined;
  readonly KAFKA_SASL_PASSWORD_FILE?: string | undefined;
  readonly KAFKA_SSL_CA_FILE?: string | undefined;
  readonly KAFKA_SSL_CERT_FILE?: string | undefined;
  readonly KAFKA_SSL_KEY_FILE?: string | undefined;
  readonly KAFKA_SSL_KEY_PASSWORD_FILE?: string | undefined;
}

/** The runtime's kafkaSecurity, or undefined when no KAFKA_SECURITY_* / KAFKA_SASL_* / KAFKA_SSL_* is set. */
export function kafkaSecurityFromEnv(env: KafkaSecurityEnv): KafkaSecurity | undefined {
  const any = Object.entries(env).some(([key, value]) => /^KAFKA_(SECURITY|SASL|SSL)_/.test(key) && value !== undefined);
  if (!any) return undefined;
  if (env.KAFKA_SECURITY_PROTOCOL === undefined) {
    throw new IqgateError('INVALID_CONFIG', 'KAFKA_SASL_* and KAFKA_SSL_* need KAFKA_SECURITY_PROTOCOL (SSL, SASL_PLAINTEXT or SASL_SSL)', { details: { exitCode: 2 } });
  }
  const file = (variable: keyof KafkaSecurityEnv, trim: boolean) => (env[variable] === undefined ? undefined : readConfigFile(variable, env[variable]!, { trim }));
  const ssl = { ca: file('KAFKA_SSL_CA_FILE', false), cert: file('KAFKA_SSL_CERT_FILE', false), key: file('KAFKA_SSL_KEY_FILE', false), keyPassword: file('KAFKA_SSL_KEY_PASSWORD_FILE', true) };
  const given = Object.fromEntries(Object.entries(ssl).filter(([, value]) => value !== undefined));
  const input = {
    protocol: env.KAFKA_SECURITY_PROTOCOL,
    ...(env.KAFKA_SASL_MECHANISM === undefined && env.KAFKA_SASL_USERNAME === undefined && env.KAFKA_SASL_PASSWORD_FILE === undefined ? {} : {
      sasl: {
        ...(env.KAFKA_SASL_MECHANISM === undefined ? {} : { mechanism: env.KAFKA_SASL_MECHANISM }),
        ...(env.KAFKA_SASL_USERNAME === undefined ? {} : { username: env.KAFKA_SASL_USERNAME }),
        ...(env.KAFKA_SASL_PASSWORD_FILE === undefined ? {} : { password: file('KAFKA_SASL_PASSWORD_FILE', true) }),
      },
    }),
    ...(Object.keys(given).length === 0 ? {} : { ssl: given }),
  };
  const parsed = kafkaSecuritySchema.safeParse(input);
  if (!parsed.success) {
    // Paths and rules, never values (one of them is a password).
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'kafka security'}: ${issue.message}`).join('; ');
    throw new IqgateError('INVALID_CONFIG', `invalid Kafka security settings (KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_*, KAFKA_SSL_*): ${problems}`, { details: { exitCode: 2 } });
  }
  return parsed.data;
}
