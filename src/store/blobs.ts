/**
 * The in-memory store's journal of relayed conversations (store/index.ts `putJournal`):
 * key -> a JSON text with its expiry, bounded by total size (the oldest entries go first
 * past `maxBytes`), so a replica without Redis cannot grow without limit.
 */
export class BlobMap {
  private readonly entries = new Map<string, { value: string; expiresAt: number }>();
  private bytes = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly now: () => number = Date.now,
  ) {}

  get(key: string): string | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.expiresAt <= this.now()) {
      this.drop(key);
      return undefined;
    }
    return e.value;
  }

  /** Stores `value` for `ttlMs` (replacing an older value); a value larger than the whole bound is not kept. */
  set(key: string, value: string, ttlMs: number): void {
    this.drop(key);
    if (value.length > this.maxBytes) return;
    this.entries.set(key, { value, expiresAt: this.now() + ttlMs });
    this.bytes += value.length;
    for (const oldest of this.entries.keys()) {
      if (this.bytes <= this.maxBytes) break;
      this.drop(oldest);
    }
  }

  private drop(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.bytes -= e.value.length;
    this.entries.delete(key);
  }
}
