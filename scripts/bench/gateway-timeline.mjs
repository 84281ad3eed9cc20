// A Switchyard arm's own view of a load run, second by second: the garbage collector's pause
// time and the event loop's longest delay, read from its /metrics (prom-client's default
// metrics: nodejs_gc_duration_seconds per kind, nodejs_eventloop_lag_max_seconds, which
// prom-client resets at every scrape, so each sample is the longest delay since the last).
// Used by the open-loop phase to explain a slow round after idle (issue 33).
import { performance } from 'node:perf_hooks';

const GC = /^switchyard_nodejs_gc_duration_seconds_(sum|count)\{kind="(\w+)"\} ([\d.e+-]+)$/;
const LAG = /^switchyard_nodejs_eventloop_lag_max_seconds ([\d.e+-]+)$/;

/** Parses one scrape: { gc: { kind: { sum_s, count } }, lag_max_s }. */
export function parseScrape(text) {
  const gc = {};
  let lag = null;
  for (const line of text.split('\n')) {
    const g = GC.exec(line);
    if (g) {
      gc[g[2]] ??= { sum_s: 0, count: 0 };
      gc[g[2]][g[1] === 'sum' ? 'sum_s' : 'count'] = Number(g[3]);
      continue;
    }
    const l = LAG.exec(line);
    if (l) lag = Number(l[1]);
  }
  return { gc, lag_max_s: lag };
}

/**
 * Scrapes `url`/metrics every `everyMs` until stop() is called.
 * @returns { stop(): Promise<[{ t_s, gc_ms, gc_count, gc_major_ms, lag_max_ms }]> }: per
 *   interval, the GC pause total (and its major part), the collections, and the longest
 *   event-loop delay; t_s from the start. A failed scrape leaves its interval out.
 */
export function watchGateway(url, everyMs = 1000) {
  const t0 = performance.now();
  const samples = [];
  let last = null;
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        const res = await fetch(`${url}/metrics`, { signal: globalThis.AbortSignal.timeout(2000) });
        const now = parseScrape(await res.text());
        if (last) {
          const sum = (s, kinds) => Object.entries(s.gc).reduce((n, [k, v]) => (kinds(k) ? n + v.sum_s : n), 0);
          const count = (s) => Object.values(s.gc).reduce((n, v) => n + v.count, 0);
          samples.push({
            t_s: Math.round((performance.now() - t0) / 100) / 10,
            gc_ms: Math.round((sum(now, () => true) - sum(last, () => true)) * 1e4) / 10,
            gc_major_ms: Math.round((sum(now, (k) => k === 'major') - sum(last, (k) => k === 'major')) * 1e4) / 10,
            gc_count: count(now) - count(last),
            lag_max_ms: now.lag_max_s === null ? null : Math.round(now.lag_max_s * 1e4) / 10,
          });
        }
        last = now;
      } catch {
        // The gateway busy past 2 s or gone: this interval is left out.
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return samples;
    },
  };
}
