/**
 * Client (virtual) keys: stored as SHA-256 hex, compared in constant time.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { ClientKeyConfig } from '../config/schema.js';

/** The demo key accepted by the default config; documented in the README. */
export const DEMO_KEY = 'sk-switchyard-demo';

/** Hex SHA-256 of a key, as stored in `keys[].key_sha256`. */
export function hashKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export interface Caller {
  readonly name: string;
  /** Allowed public model names; `*` allows every model. */
  readonly models: readonly string[];
}

export class KeyStore {
  private readonly entries: { digest: Buffer; caller: Caller }[];

  constructor(keys: readonly ClientKeyConfig[]) {
    this.entries = keys.map((k) => ({ digest: Buffer.from(k.key_sha256, 'hex'), caller: { name: k.name, models: k.models } }));
  }

  /**
   * Finds the caller for a presented key. Every stored digest is compared with
   * `timingSafeEqual`, with no early exit, so timing says nothing about which matched.
   */
  authenticate(presented: string): Caller | null {
    const digest = createHash('sha256').update(presented, 'utf8').digest();
    let found: Caller | null = null;
    for (const e of this.entries) if (timingSafeEqual(digest, e.digest)) found ??= e.caller;
    return found;
  }

  /** Whether the demo key would be accepted (for the start-up warning). */
  acceptsDemoKey(): boolean {
    return this.authenticate(DEMO_KEY) !== null;
  }
}

/** Whether `caller` may use the public model `name`. */
export function mayUse(caller: Caller, name: string): boolean {
  return caller.models.includes('*') || caller.models.includes(name);
}
