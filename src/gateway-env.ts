/**
 * The gateway's security settings as `iqgate start` reads them from the environment
 * (src/main.ts's envSchema validates the values; this reads the files they name). Secrets —
 * API keys, the cluster secret, the TLS key — are read from files (never flags, which `ps`
 * shows) and never printed: an error names the variable and what is wrong, not the value.
 */
import { readConfigFile as readFile } from './config-file.js';
import { IqgateError } from './errors.js';
import { ApiKeys } from './graphql/gate/api-keys.js';
import { JwtVerifier } from './graphql/gate/jwt-verifier.js';
import type { ServeOptions } from './serve.js';
import { isLoopback } from './graphql/listen-gateway.js';

/** The environment keys this module reads (validated strings, as envSchema leaves them). */
export interface GatewayEnv {
  readonly HOST: string;
  readonly IQGATE_ANONYMOUS?: 'true' | 'false' | undefined;
  readonly IQGATE_API_KEYS_FILE?: string | undefined;
  readonly IQGATE_JWT_JWKS_URL?: string | undefined;
  readonly IQGATE_JWT_PUBLIC_KEY_FILE?: string | undefined;
  readonly IQGATE_JWT_ISSUER?: string | undefined;
  readonly IQGATE_JWT_AUDIENCE?: string | undefined;
  readonly IQGATE_JWT_STORES_CLAIM?: string | undefined;
  readonly IQGATE_CLUSTER_SECRET_FILE?: string | undefined;
  readonly IQGATE_CORS_ORIGINS?: string | undefined;
  readonly IQGATE_PRODUCTION?: 'true' | 'false' | undefined;
  readonly IQGATE_RATE_LIMIT?: number | undefined;
  readonly IQGATE_TLS_CERT_FILE?: string | undefined;
  readonly IQGATE_TLS_KEY_FILE?: string | undefined;
  readonly IQGATE_ADVERTISED_URL?: string | undefined;
}

export type GatewaySecurity = Pick<ServeOptions, 'auth' | 'corsOrigins' | 'production' | 'rateLimit' | 'tls'>;

/** INVALID_CONFIG with exit code 2, as for any bad environment value. */
function invalid(message: string): IqgateError {
  return new IqgateError('INVALID_CONFIG', message, { details: { exitCode: 2 } });
}

/**
 * The serve() options the environment asks for. Refuses, before anything starts: no
 * authentication chosen on an address beyond loopback; routing (IQGATE_ADVERTISED_URL) with
 * authentication but no cluster secret (the owners could not tell forwards from clients);
 * half a TLS pair.
 */
export function gatewaySecurityFromEnv(env: GatewayEnv): GatewaySecurity {
  const keysText = env.IQGATE_API_KEYS_FILE === undefined ? undefined : readFile('IQGATE_API_KEYS_FILE', env.IQGATE_API_KEYS_FILE);
  const apiKeys = keysText === undefined ? undefined : withVariable('IQGATE_API_KEYS_FILE', () => ApiKeys.parse(keysText));
  const publicKey = env.IQGATE_JWT_PUBLIC_KEY_FILE === undefined ? undefined : readFile('IQGATE_JWT_PUBLIC_KEY_FILE', env.IQGATE_JWT_PUBLIC_KEY_FILE);
  const jwtChosen = env.IQGATE_JWT_JWKS_URL !== undefined || publicKey !== undefined;
  if (!jwtChosen && (env.IQGATE_JWT_ISSUER !== undefined || env.IQGATE_JWT_AUDIENCE !== undefined || env.IQGATE_JWT_STORES_CLAIM !== undefined)) {
    throw invalid('IQGATE_JWT_ISSUER, IQGATE_JWT_AUDIENCE and IQGATE_JWT_STORES_CLAIM need IQGATE_JWT_JWKS_URL or IQGATE_JWT_PUBLIC_KEY_FILE');
  }
  // Built here, so a key file that is no key stops start-up before a broker or a runtime starts.
  const jwt = !jwtChosen ? undefined : withVariable(publicKey === undefined ? 'IQGATE_JWT_JWKS_URL' : 'IQGATE_JWT_PUBLIC_KEY_FILE', () => new JwtVerifier({
    ...(env.IQGATE_JWT_JWKS_URL === undefined ? {} : { jwksUrl: env.IQGATE_JWT_JWKS_URL }),
    ...(publicKey === undefined ? {} : { publicKey }),
    ...(env.IQGATE_JWT_ISSUER === undefined ? {} : { issuer: env.IQGATE_JWT_ISSUER }),
    ...(env.IQGATE_JWT_AUDIENCE === undefined ? {} : { audience: env.IQGATE_JWT_AUDIENCE }),
    ...(env.IQGATE_JWT_STORES_CLAIM === undefined ? {} : { storesClaim: env.IQGATE_JWT_STORES_CLAIM }),
  }));
  const clusterSecret = env.IQGATE_CLUSTER_SECRET_FILE === undefined ? undefined : readFile('IQGATE_CLUSTER_SECRET_FILE', env.IQGATE_CLUSTER_SECRET_FILE, { trim: true });
  if (clusterSecret !== undefined && clusterSecret.length < 32) throw invalid('IQGATE_CLUSTER_SECRET_FILE: the cluster secret needs at least 32 characters');

  const authenticated = jwt !== undefined || apiKeys !== undefined;
  const anonymous = env.IQGATE_ANONYMOUS === undefined ? undefined : env.IQGATE_ANONYMOUS === 'true';
  if (!authenticated && anonymous === undefined && !isLoopback(env.HOST)) {
    throw invalid(`HOST=${env.HOST} serves other machines, and no authentication is configured: set IQGATE_API_KEYS_FILE or IQGATE_JWT_JWKS_URL / IQGATE_JWT_PUBLIC_KEY_FILE, or IQGATE_ANONYMOUS=true to serve anyone by choice`);
  }
  if (!authenticated && anonymous === false) throw invalid('IQGATE_ANONYMOUS=false needs IQGATE_API_KEYS_FILE or a JWT key source: no one could call the gateway');
  if (env.IQGATE_ADVERTISED_URL !== undefined && authenticated && clusterSecret === undefined) {
    throw invalid('IQGATE_ADVERTISED_URL with authentication needs a cluster secret (IQGATE_CLUSTER_SECRET_FILE) shared by every instance: owners must tell forwards from clients');
  }
  if ((env.IQGATE_TLS_CERT_FILE === undefined) !== (env.IQGATE_TLS_KEY_FILE === undefined)) throw invalid('TLS needs both IQGATE_TLS_CERT_FILE and IQGATE_TLS_KEY_FILE');

  const corsOrigins = (env.IQGATE_CORS_ORIGINS ?? '').split(',').map((origin) => origin.trim()).filter((origin) => origin.length > 0);
  return {
    auth: {
      ...(anonymous === undefined ? {} : { anonymous }),
      ...(jwt === undefined ? {} : { jwt }),
      ...(apiKeys === undefined ? {} : { apiKeys }),
      ...(clusterSecret === undefined ? {} : { clusterSecret }),
    },
    corsOrigins,
    ...(env.IQGATE_PRODUCTION === undefined ? {} : { production: env.IQGATE_PRODUCTION === 'true' }),
    ...(env.IQGATE_RATE_LIMIT === undefined ? {} : { rateLimit: { requestsPerSecond: env.IQGATE_RATE_LIMIT } }),
    ...(env.IQGATE_TLS_CERT_FILE === undefined
      ? {}
      : { tls: { cert: readFile('IQGATE_TLS_CERT_FILE', env.IQGATE_TLS_CERT_FILE), key: readFile('IQGATE_TLS_KEY_FILE', env.IQGATE_TLS_KEY_FILE!) } }),
  };
}

/** Runs `read`, prefixing an INVALID_CONFIG's message with the variable and marking it exit 2. */
function withVariable<T>(variable: string, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof IqgateError && error.code === 'INVALID_CONFIG') throw invalid(`${variable}: ${error.message}`);
    throw error;
  }
}
