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
import type { Counter, Gauge } from 'prom-client';

/**
 * One entry per label values, found through nested maps keyed by the values themselves (no
 * key string is built per lookup); `entries` lists them all, in creation order.
 */
class SeriesMap<L extends string, E extends { readonly labels: Partial<Record<L, string>> }> {
  private readonly root = new Map<string, unknown>();
  readonly entries: E[] = [];

  constructor(
    private readonly names: readonly L[],
    private readonly make: (labels: Partial<Record<L, string>>) => E,
  ) {}

  /** The entry of `a`..`d` (as many values as label names), made on first use. */
  at(a: string, b?: string, c?: string, d?: string): E {
    const depth = this.names.length;
    let level = this.root;
    let v = a;
    for (let i = 0; ; i++) {
      const next = level.get(v);
      if (i === depth - 1) return (next as E | undefined) ?? this.add(level, v, [a, b, c, d]);
      level = (next as Map<string, unknown> | undefined) ?? this.branch(level, v);
      v = (i === 0 ? b : i === 1 ? c : d) as string;
    }
  }

  private branch(level: Map<string, unknown>, v: string): Map<string, unknown> {
    const m = new Map<string, unknown>();
    level.set(v, m);
    return m;
  }

  private add(level: Map<string, unknown>, v: string, values: (string | undefined)[]): E {
    const labels: Partial<Record<L, string>> = {};
    this.names.forEach((name, i) => (labels[name] = values[i]));
    const e = this.make(labels);
    level.set(v, e);
    this.entries.push(e);
    return e;
  }
}

interface Pending<L extends string> {
  readonly labels: Partial<Record<L, string>>;
  pending: number;
}

/** The label names of a prom-client metric, as its type has them. */
export type LabelsOf<M> = M extends Counter<infer L> ? L : M extends Gauge<infer L> ? L : never;

/** The Tally of a counter. */
export type TallyOf<C> = Tally<LabelsOf<C>>;

/** A metric's label names in the order it was given them (prom-client keeps them as `labelNames`; not in its types). */
function labelNames<L extends string>(metric: Counter<L> | Gauge<L>): readonly L[] {
  return (metric as unknown as { labelNames: readonly L[] }).labelNames;
}

export class Tally<L extends string> {
  private readonly series: SeriesMap<L, Pending<L>>;

  /** @param counter the prom-client counter the sums go to; `add` takes its label values in the order of its `labelNames` (1 to 4). */
  constructor(private readonly counter: Counter<L>) {
    this.series = new SeriesMap(labelNames(counter), (labels) => ({ labels, pending: 0 }));
    (counter as unknown as { collect: () => void }).collect = () => this.flush();
  }

  /** Adds `n` (≥ 0; 0 is a no-op, as prom-client would add nothing) to the series of `a`..`d` (as many as the label names). */
  add(n: number, a: string, b?: string, c?: string, d?: string): void {
    if (n > 0) this.series.at(a, b, c, d).pending += n;
  }

  /** Hands every pending sum to the counter (prom-client calls this before reading it). */
  flush(): void {
    for (const e of this.series.entries) {
      if (e.pending === 0) continue;
      this.counter.inc(e.labels, e.pending);
      e.pending = 0;
    }
  }
}

/**
 * A gauge whose series are computed from state kept per label values (`S`, made by `make`)
 * and set when prom-client reads it (`value`; null: the series is not set yet), so a request
 * updates plain fields rather than calling `Gauge.set` (which sorts the label names and
 * builds a hash string each time). The gauge's `collect` hook is taken.
 */
export class GaugeTally<L extends string, S> {
  private readonly series: SeriesMap<L, { readonly labels: Partial<Record<L, string>>; readonly state: S }>;

  /** @param gauge the gauge; `at` takes its label values in the order of its `labelNames` (1 to 4). */
  constructor(gauge: Gauge<L>, make: () => S, value: (state: S) => number | null) {
    this.series = new SeriesMap(labelNames(gauge), (labels) => ({ labels, state: make() }));
    (gauge as unknown as { collect: () => void }).collect = () => {
      for (const e of this.series.entries) {
        const v = value(e.state);
        if (v !== null) gauge.set(e.labels, v);
      }
    };
  }

  /** The state of the series `a`..`d`, made on first use; the caller updates it in place. */
  at(a: string, b?: string, c?: string, d?: string): S {
    return this.series.at(a, b, c, d).state;
  }
}
