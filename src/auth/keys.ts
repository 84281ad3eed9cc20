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
  /**
   * Callers of keys this store accepted, by hex digest: at most one entry per configured key
   * (only a digest that matched is added), so a flood of unknown keys cannot grow it.
   */
  private readonly accepted = new Map<string, Caller>();

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

  /**
   * The caller of the key with hex SHA-256 `hex` if this store accepted it before, else
   * undefined. A plain map lookup, not constant-time: it runs on the digest, which says
   * nothing of the key, and only finds digests that already matched.
   */
  acceptedBefore(hex: string): Caller | undefined {
    return this.accepted.get(hex);
  }

  /** {@link byDigest} for a hex digest; a match is remembered for {@link acceptedBefore}. */
  byHex(hex: string): Caller | null {
    const caller = this.byDigest(Buffer.from(hex, 'hex'));
    if (caller) this.accepted.set(hex, caller);
    return caller;
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
