/**
 * Bearer JWTs, verified with jose (signature, `exp`/`nbf`, issuer, audience, algorithm) against
 * a JWKS URL — jose's remote key set caches the keys and refetches them at most every 30 s when
 * a token names an unknown `kid`, so a key rotation is picked up without a restart — or against
 * keys given up front (a PEM public key or a JWKS document, read from a file at start-up).
 *
 * A verified token's principal is cached until the token expires (at most 10 minutes, 10,000
 * tokens): verifying an RS256 signature costs more than answering a key query, and a client
 * sends the same token with every request.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import { createLocalJWKSet, createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { IqgateError } from '../../errors.js';
import { storeGrant, type Principal } from './principal.js';

export interface JwtOptions {
  /** A JWKS endpoint (https, or http on a trusted network), e.g. your identity provider's. */
  readonly jwksUrl?: string;
  /** Keys given up front: a PEM public key (SPKI) or a JWKS document (JSON text). */
  readonly publicKey?: string;
  /** Required `iss`, when set. */
  readonly issuer?: string;
  /** Required `aud` (one of), when set. */
  readonly audience?: string;
  /** The claim that lists the stores a token may read (array, or a space-separated string; `*` for all). Default `iqgate_stores`. */
  readonly storesClaim?: string;
  /** Accepted algorithms. Default: RS256, PS256, ES256, EdDSA (never `none`, never HMAC with a public key). */
  readonly algorithms?: readonly string[];
}

const DEFAULT_ALGORITHMS = ['RS256', 'PS256', 'ES256', 'EdDSA'];
const MAX_CACHED = 10_000;
const MAX_CACHE_MS = 10 * 60_000;

/** A JWT has three base64url parts; an API key sent as a bearer token does not look like one. */
export function looksLikeJwt(token: string): boolean {
  return /^[\w-]+\.[\w-]+\.[\w-]+$/.test(token);
}

export class JwtVerifier {
  private readonly key: KeyObject | JWTVerifyGetKey;
  private readonly cache = new Map<string, { readonly principal: Principal; readonly until: number }>();
  private readonly storesClaim: string;
  private readonly algorithms: string[];

  constructor(private readonly options: JwtOptions) {
    this.storesClaim = options.storesClaim ?? 'iqgate_stores';
    this.algorithms = [...(options.algorithms ?? DEFAULT_ALGORITHMS)];
    if ((options.jwksUrl === undefined) === (options.publicKey === undefined)) {
      throw new IqgateError('INVALID_CONFIG', 'JWT authentication needs exactly one of a JWKS URL and a public key (file)');
    }
    if (options.jwksUrl !== undefined) {
      const url = new URL(options.jwksUrl);
      if (!/^https?:$/.test(url.protocol)) throw new IqgateError('INVALID_CONFIG', `the JWKS URL must be http(s), not ${url.protocol}`);
      this.key = createRemoteJWKSet(url, { timeoutDuration: 5_000, cooldownDuration: 30_000 });
    } else {
      this.key = parseKeys(options.publicKey!);
    }
  }

  /** The token's principal, or UNAUTHENTICATED saying why (expired, bad signature, ...). */
  async verify(token: string): Promise<Principal> {
    const cached = this.cached(token);
    if (cached !== undefined) return cached;
    let payload;
    try {
      ({ payload } = await jwtVerify(token, this.key as KeyObject, {
        algorithms: this.algorithms,
        ...(this.options.issuer === undefined ? {} : { issuer: this.options.issuer }),
        ...(this.options.audience === undefined ? {} : { audience: this.options.audience }),
      }));
    } catch (error) {
      throw new IqgateError('UNAUTHENTICATED', `Invalid bearer token: ${reason(error)}.`, { cause: error });
    }
    const principal: Principal = { subject: typeof payload.sub === 'string' ? payload.sub : 'jwt', via: 'jwt', stores: storeGrant(payload[this.storesClaim]), forwarded: false, client: `jwt:${typeof payload.sub === 'string' ? payload.sub : '(no sub)'}` };
    const now = Date.now();
    const until = Math.min(now + MAX_CACHE_MS, payload.exp === undefined ? now + MAX_CACHE_MS : payload.exp * 1000);
    if (this.cache.size >= MAX_CACHED) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(token, { principal, until });
    return principal;
  }

  /** A principal verified before and not yet expired: the fast path's synchronous answer. */
  cached(token: string): Principal | undefined {
    const hit = this.cache.get(token);
    if (hit === undefined) return undefined;
    if (hit.until > Date.now()) return hit.principal;
    this.cache.delete(token);
    return undefined;
  }
}

function parseKeys(text: string): KeyObject | JWTVerifyGetKey {
  const trimmed = text.trim();
  try {
    if (trimmed.startsWith('{')) return createLocalJWKSet(JSON.parse(trimmed) as Parameters<typeof createLocalJWKSet>[0]);
    return createPublicKey(trimmed);
  } catch (error) {
    throw new IqgateError('INVALID_CONFIG', 'the JWT public key is neither a PEM public key nor a JWKS document', { cause: error });
  }
}

/** What a client may learn of why its token failed: jose's error kind, not the token. */
function reason(error: unknown): string {
  if (error instanceof joseErrors.JWTExpired) return 'expired';
  if (error instanceof joseErrors.JWTClaimValidationFailed) return `claim ${error.claim} ${error.reason === 'check_failed' ? 'does not match' : 'is missing'}`;
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return 'bad signature';
  if (error instanceof joseErrors.JOSEAlgNotAllowed) return 'algorithm not allowed';
  if (error instanceof joseErrors.JWKSNoMatchingKey) return 'no matching key';
  if (error instanceof joseErrors.JWKSTimeout) return 'key set unavailable';
  return 'malformed';
}
