/**
 * Client (virtual) keys: stored as SHA-256 hex, compared in constant time.
 */
import { hash, timingSafeEqual } from 'node:crypto';
import type { ClientKeyConfig } from '../config/schema.js';
import { globMatch } from '../util/glob.js';

/** The demo key accepted by the default config; documented in the README. */
export const DEMO_KEY = 'sk-switchyard-demo';

/** Hex SHA-256 of a key, as stored in `keys[].key_sha256`. */
export function hashKey(key: string): string {
  return hash('sha256', key, 'hex');
}

export interface Caller {
  readonly name: string;
  /** Allowed public model names or globs (`gpt-*`, `*-reasoner`); `*` allows every model. */
  readonly models: readonly string[];
  /** Per-key limits and budget (see src/limits). */
  readonly limits?: ClientKeyConfig['limits'];
  /** `background` calls take the shed ladder's lower rungs first (docs/burst-control.md, "Shedding"). */
  readonly priority?: 'interactive' | 'background';
  /** The key's configured `metadata`: its tags in the ledger (record/tags.ts). */
  readonly metadata?: Readonly<Record<string, string>>;
}

export class KeyStore {
  private readonly entries: { digest: Buffer; caller: Caller }[];

  constructor(keys: readonly ClientKeyConfig[]) {
    this.entries = keys.map((k) => ({
      digest: Buffer.from(k.key_sha256, 'hex'),
      caller: { name: k.name, models: k.models, priority: k.priority, metadata: k.metadata, ...(k.limits ? { limits: k.limits } : {}) },
    }));
  }

  /**
   * Finds the caller for a presented key. Every stored digest is compared with
   * `timingSafeEqual`, with no early exit, so timing says nothing about which matched.
   */
  authenticate(presented: string): Caller | null {
    return this.byDigest(hash('sha256', presented, 'buffer'));
  }

  /** {@link authenticate} for a key already hashed (the 32-byte SHA-256 digest). */
  byDigest(digest: Buffer): Caller | null {
    let found: Caller | null = null;
    for (const e of this.entries) if (timingSafeEqual(digest, e.digest)) found ??= e.caller;
    return found;
  }

  /** Hex digests of every key this store accepts (remembered by the auth throttle across reloads). */
  digests(): string[] {
    return this.entries.map((e) => e.digest.toString('hex'));
  }

  /** Whether the demo key would be accepted (for the start-up warning). */
  acceptsDemoKey(): boolean {
    return this.authenticate(DEMO_KEY) !== null;
  }
}

/** Whether `caller` may use the public model `name` (exact names or globs, `*` only: util/glob.ts). */
export function mayUse(caller: Caller, name: string): boolean {
  return caller.models.some((p) => globMatch(p, name));
}
