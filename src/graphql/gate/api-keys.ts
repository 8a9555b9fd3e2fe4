/**
 * API keys from a file, for services and for a browser (the dashboard, GraphiQL: HTTP Basic
 * with the key as password, which a browser asks for and then sends with each same-origin
 * request). A key is found by the SHA-256 digest of what the client sent, and the file may hold
 * the digest instead of the key, so a leaked file need not leak keys.
 *
 * The file is JSON: `[{ "name": "dashboard", "key": "…" | "sha256": "<hex>", "stores": ["*"] }]`.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { IqgateError } from '../../errors.js';
import { storeGrant, type Principal } from './principal.js';

const apiKeySchema = z.strictObject({
  name: z.string().min(1),
  key: z.string().min(16, 'an API key needs at least 16 characters').optional(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/i, 'sha256 must be 64 hex digits').optional(),
  stores: z.union([z.array(z.string()), z.string()]),
}).refine((entry) => (entry.key === undefined) !== (entry.sha256 === undefined), { message: 'give exactly one of key and sha256' });

export type ApiKeyEntry = z.input<typeof apiKeySchema>;

function digest(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export class ApiKeys {
  private readonly byDigest = new Map<string, Principal>();

  constructor(entries: readonly ApiKeyEntry[]) {
    const parsed = z.array(apiKeySchema).safeParse(entries);
    if (!parsed.success) {
      // The issues name paths and rules, never the values (they are keys).
      throw new IqgateError('INVALID_CONFIG', `invalid API keys: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
    }
    for (const entry of parsed.data) {
      const hex = (entry.sha256 ?? digest(entry.key!)).toLowerCase();
      if (this.byDigest.has(hex)) throw new IqgateError('INVALID_CONFIG', `invalid API keys: ${entry.name} repeats another entry's key`);
      this.byDigest.set(hex, { subject: entry.name, via: 'api-key', stores: storeGrant(entry.stores), forwarded: false, client: `api-key:${entry.name}` });
    }
  }

  /** Parses the file's text (JSON); INVALID_CONFIG on anything else. */
  static parse(text: string): ApiKeys {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new IqgateError('INVALID_CONFIG', 'the API keys file is not JSON');
    }
    if (!Array.isArray(json)) throw new IqgateError('INVALID_CONFIG', 'the API keys file must hold a JSON array');
    return new ApiKeys(json as ApiKeyEntry[]);
  }

  get size(): number {
    return this.byDigest.size;
  }

  /**
   * The key's principal, or undefined. A lookup by digest leaks nothing by its timing: an
   * attacker learns at most how a digest of their guess compares, which says nothing of a key.
   */
  find(key: string): Principal | undefined {
    return this.byDigest.get(digest(key));
  }
}
