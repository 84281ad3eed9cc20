/**
 * Reading values out of the gateway's Prometheus text exposition (`gw.metricsText()`):
 * enough of the format for prom-client output, matching samples by name and a subset of
 * their labels.
 */

/** Each sample line of `text`: its name, its labels and its value text. */
function* samples(text: string): Generator<{ name: string; labels: Record<string, string>; value: string }> {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})?\s+(\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    yield { name: m[1]!, labels, value: m[3]! };
  }
}

const hasLabels = (got: Record<string, string>, want: Record<string, string>) => Object.entries(want).every(([k, v]) => got[k] === v);

/** Sum of every sample of `name` whose labels include `labels` (0 when there is none). */
export function metricSum(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const s of samples(text)) if (s.name === name && hasLabels(s.labels, labels)) sum += Number(s.value);
  return sum;
}

/** The value of the first sample of `name` whose labels include `labels`, or undefined when absent. */
export function metricValue(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const s of samples(text)) if (s.name === name && hasLabels(s.labels, labels)) return Number(s.value);
  return undefined;
}
