/**
 * The ledger's spool: a local file of rows (one JSON object per line) waiting for
 * PostgreSQL. Appends are serialized and never block the event loop; the file is bounded
 * (`ledger.spool_max_bytes`: past it rows are refused and counted as dropped). Replay moves
 * the file aside first (atomic rename), so rows spooled while a replay runs land in a fresh
 * file and are never lost to the replay's clean-up; a replay cut short by a crash is found
 * again at the next start. Each row keeps its id, so a row replayed twice is written once.
 */
import { createReadStream } from 'node:fs';
import { appendFile, mkdir, rename, stat, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import type { LedgerRow } from './row.js';

export class Spool {
  /** Bytes in the spool file (and a replay file not yet finished). */
  private bytes = 0;
  /** Rows in the spool, as far as this process knows (rows found at start are counted once read). */
  private count = 0;
  private chain: Promise<unknown> = Promise.resolve();

  /**
   * @param path the spool file; `<path>.replay` is the file a replay works on.
   * @param maxBytes the bound on the spool's size.
   */
  constructor(
    readonly path: string,
    private readonly maxBytes: number,
  ) {}

  /** Reads the sizes of files left by an earlier run (they are replayed like any spool). */
  async open(): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true });
    for (const p of [this.path, `${this.path}.replay`]) {
      const s = await stat(p).catch(() => null);
      if (s) {
        this.bytes += s.size;
        // An estimate until read; exact once replayed.
        this.count += Math.ceil(s.size / 600);
      }
    }
  }

  /** Rows waiting in the spool. */
  get rows(): number {
    return this.count;
  }

  /** Whether anything waits to be replayed. */
  get pending(): boolean {
    return this.bytes > 0;
  }

  /**
   * Appends rows; resolves with how many were taken (the rest did not fit the bound).
   * Never rejects: a failed write takes none.
   */
  append(rows: readonly LedgerRow[]): Promise<number> {
    const run = async (): Promise<number> => {
      let text = '';
      let taken = 0;
      for (const r of rows) {
        const line = `${JSON.stringify(r)}\n`;
        if (this.bytes + text.length + line.length > this.maxBytes) break;
        text += line;
        taken++;
      }
      if (taken === 0) return 0;
      try {
        await appendFile(this.path, text, { encoding: 'utf8', mode: 0o600 });
      } catch {
        return 0;
      }
      this.bytes += Buffer.byteLength(text);
      this.count += taken;
      return taken;
    };
    const p = this.chain.then(run);
    this.chain = p.catch(() => undefined);
    return p;
  }

  /**
   * Replays the spool: moves it aside, hands its rows to `write` in batches of `batch`,
   * then deletes it. A `write` that throws stops the replay; the file stays for the next.
   * @returns rows handed to `write`.
   */
  async replay(batch: number, write: (rows: LedgerRow[]) => Promise<void>): Promise<number> {
    const aside = `${this.path}.replay`;
    // Serialized with appends, so the rename never cuts a line in half.
    await (this.chain = this.chain.then(async () => {
      const left = await stat(aside).catch(() => null);
      if (!left) await rename(this.path, aside).catch(() => undefined);
    }));
    const s = await stat(aside).catch(() => null);
    if (!s) return 0;
    let done = 0;
    let rows: LedgerRow[] = [];
    const lines = createInterface({ input: createReadStream(aside, { encoding: 'utf8' }), crlfDelay: Infinity });
    for await (const line of lines) {
      if (line === '') continue;
      try {
        rows.push(JSON.parse(line) as LedgerRow);
      } catch {
        // A line cut by a crash mid-append; its row was never acknowledged to anyone.
        continue;
      }
      if (rows.length >= batch) {
        await write(rows);
        done += rows.length;
        rows = [];
      }
    }
    if (rows.length > 0) await write(rows);
    done += rows.length;
    await unlink(aside);
    this.bytes = Math.max(0, this.bytes - s.size);
    this.count = Math.max(0, this.count - done);
    if (this.bytes === 0) this.count = 0;
    return done;
  }
}
