/**
 * Per-request counter increments without prom-client's per-call work. `Counter.inc(labels, n)`
 * builds a label hash string, validates the labels and returns an object on every call (and
 * its `labels()` child does the same), and a finished request makes about ten such calls:
 * `npm run bench:alloc` put prom-client's share at ~3.5 KB of the ~80 KB a request allocates
 * (856f097). A `Tally` keeps one entry per label values (nested maps looked up by the values
 * themselves: no key string is built) holding a plain number, and hands the sums to the
 * counter when prom-client collects it (`/metrics`, the workers' aggregation): the exported
 * series are the same, only their increments are batched up to the scrape.
 *
 * The counter's `collect` hook is taken: a counter given to a Tally must not have its own.
 */
import type { Counter } from 'prom-client';

interface Entry<L extends string> {
  readonly labels: Partial<Record<L, string>>;
  pending: number;
}

type Level<L extends string> = Map<string, Level<L> | Entry<L>>;

export class Tally<L extends string> {
  private readonly root: Level<L> = new Map();
  private readonly entries: Entry<L>[] = [];

  /**
   * @param counter the prom-client counter the sums go to.
   * @param names its label names, in the order `add` takes their values (1 to 4).
   */
  constructor(
    private readonly counter: Counter<L>,
    private readonly names: readonly L[],
  ) {
    (counter as unknown as { collect: () => void }).collect = () => this.flush();
  }

  /** Adds `n` (≥ 0; 0 is a no-op, as prom-client would add nothing) to the series of `a`..`d` (as many as the label names). */
  add(n: number, a: string, b?: string, c?: string, d?: string): void {
    if (!(n > 0)) return;
    const depth = this.names.length;
    let level = this.root;
    let v = a;
    for (let i = 0; ; i++) {
      const last = i === depth - 1;
      let next = level.get(v);
      if (next === undefined) {
        next = last ? this.entry(a, b, c, d) : new Map();
        level.set(v, next);
      }
      if (last) {
        (next as Entry<L>).pending += n;
        return;
      }
      level = next as Level<L>;
      v = (i === 0 ? b : i === 1 ? c : d) as string;
    }
  }

  /** Hands every pending sum to the counter (prom-client calls this before reading it). */
  flush(): void {
    for (const e of this.entries) {
      if (e.pending === 0) continue;
      this.counter.inc(e.labels, e.pending);
      e.pending = 0;
    }
  }

  private entry(a: string, b?: string, c?: string, d?: string): Entry<L> {
    const values = [a, b, c, d];
    const labels: Partial<Record<L, string>> = {};
    this.names.forEach((name, i) => (labels[name] = values[i]));
    const e: Entry<L> = { labels, pending: 0 };
    this.entries.push(e);
    return e;
  }
}
