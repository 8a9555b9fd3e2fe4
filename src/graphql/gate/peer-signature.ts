/**
 * How instances of one application prove a forwarded request is theirs: an HMAC-SHA256, keyed
 * by the cluster secret every instance is given, over the time, the method, the path and the
 * SHA-256 of the body, sent in the forwarded marker header:
 *
 *   x-iqgate-forwarded: v1 <unix ms> <base64url hmac>
 *
 * A shared secret rather than mutual TLS: it needs no certificate authority or per-instance
 * certificates, works over the plain HTTP a cluster network often uses (and under TLS when the
 * listener has it), and costs two hashes per forward. Binding the body means a captured header
 * cannot carry another query; the time bounds replays of the same one to SKEW_MS either side.
 */
import { Buffer } from 'node:buffer';
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/** How far a signature's time may be from ours: clock skew plus the forward's own latency. */
export const SKEW_MS = 30_000;

function mac(secret: string, time: string, method: string, path: string, body: Uint8Array): Buffer {
  const bodyDigest = createHash('sha256').update(body).digest('hex');
  return createHmac('sha256', secret).update(`v1\n${time}\n${method.toUpperCase()}\n${path}\n${bodyDigest}`).digest();
}

/** The marker header's value for a request of `method` to `path` carrying `body`. */
export function signForward(secret: string, method: string, path: string, body: Uint8Array, now = Date.now()): string {
  const time = String(now);
  return `v1 ${time} ${mac(secret, time, method, path, body).toString('base64url')}`;
}

/** Whether `header` is a valid signature, made within SKEW_MS of now, of this very request. */
export function verifyForward(secret: string, header: string, method: string, path: string, body: Uint8Array, now = Date.now()): boolean {
  const [version, time, signature, ...rest] = header.split(' ');
  if (version !== 'v1' || time === undefined || signature === undefined || rest.length > 0 || !/^\d{1,15}$/.test(time)) return false;
  if (Math.abs(now - Number(time)) > SKEW_MS) return false;
  const expected = mac(secret, time, method, path, body);
  const given = Buffer.from(signature, 'base64url');
  return given.length === expected.length && timingSafeEqual(given, expected);
}
