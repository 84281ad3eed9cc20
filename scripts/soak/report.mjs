// The soak's report: docs/soak.md (targets, counts, causes, the timeline) and an SVG chart
// of RSS and event-loop delay per replica over time (written here rather than with a chart
// library: two polylines need no dependency).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};
const near = (a, b) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));

function chart(samples, events, names) {
  const W = 900;
  const H = 220;
  const pad = 50;
  const t1 = Math.max(...samples.map((s) => s.t));
  const t0 = Math.min(...samples.map((s) => s.t));
  const x = (t) => pad + ((t - t0) / Math.max(1, t1 - t0)) * (W - 2 * pad);
  const colours = ['#1f77b4', '#d62728'];
  const panel = (top, key, label, unit) => {
    const max = Math.max(1, ...samples.flatMap((s) => names.map((n) => s[n]?.[key] ?? 0)).filter(Number.isFinite)) * 1.1;
    const y = (v) => top + H - (v / max) * H;
    const lines = names
      .map((n, i) => {
        const pts = samples.filter((s) => Number.isFinite(s[n]?.[key])).map((s) => `${x(s.t).toFixed(1)},${y(s[n][key]).toFixed(1)}`);
        return `<polyline fill="none" stroke="${colours[i]}" stroke-width="1.5" points="${pts.join(' ')}"/><text x="${W - pad - 120}" y="${top + 15 + 14 * i}" fill="${colours[i]}" font-size="12">${n}</text>`;
      })
      .join('');
    const ticks = [0, 0.5, 1].map((f) => `<text x="${pad - 6}" y="${y(max * f) + 4}" font-size="11" text-anchor="end">${(max * f).toFixed(0)}</text>`).join('');
    return `<text x="${pad}" y="${top - 8}" font-size="13">${label} (${unit})</text><rect x="${pad}" y="${top}" width="${W - 2 * pad}" height="${H}" fill="none" stroke="#ccc"/>${ticks}${lines}`;
  };
  const marks = events
    .map(
      (e) =>
        `<line x1="${x(e.t)}" x2="${x(e.t)}" y1="30" y2="${2 * H + 90}" stroke="#888" stroke-dasharray="4 3"/><text x="${x(e.t) + 3}" y="${2 * H + 100}" font-size="11">${e.what}</text>`,
    )
    .join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${2 * H + 120}" font-family="sans-serif">${panel(30, 'rssMb', 'RSS', 'MB')}${panel(H + 70, 'loopP99Ms', 'event-loop delay p99 per 5 s', 'ms')}${marks}<text x="${W / 2}" y="${2 * H + 115}" font-size="11" text-anchor="middle">seconds since start</text></svg>\n`;
}

/** Writes the report into `out`; returns whether every target held and one line per check. */
export function writeReport(r, out) {
  const names = ['gw-1', 'gw-2'];
  const soak = r.samples.filter((s) => s.phase !== 'start');
  const warmT = r.samples[0].t + Math.min(60, r.minutes * 6);
  const warm = soak.find((s) => s.t >= warmT) ?? soak[0];
  const last = r.samples.at(-1);
  const growth = Object.fromEntries(names.map((n) => [n, last[n].rssMb - warm[n].rssMb]));
  const loops = soak.flatMap((s) => names.map((n) => s[n].loopP99Ms)).filter(Number.isFinite);
  const loopP99 = pct(loops, 99);
  const checks = [
    ['gateway-caused failures', r.gatewayCaused, '0', r.gatewayCaused === 0],
    ['requests in the logs (request finished)', r.logs.finished, `= sent (${r.sent})`, r.logs.finished === r.sent],
    [
      'request ids logged twice / client ids missing from the logs',
      `${r.logs.duplicated} / ${r.logs.clientIdsMissing}`,
      '0 / 0',
      r.logs.duplicated === 0 && r.logs.clientIdsMissing === 0,
    ],
    ['requests in the metrics (switchyard_requests_total)', r.metrics.requests, `= sent (${r.sent})`, r.metrics.requests === r.sent],
    [
      'spend: logs = metrics = Redis (USD)',
      `${r.spend.logs.toFixed(6)} / ${r.spend.metrics.toFixed(6)} / ${r.spend.redis.toFixed(6)}`,
      'equal',
      near(r.spend.logs, r.spend.metrics) && near(r.spend.logs, r.spend.redis),
    ],
    ['RSS growth after warm-up (MB)', names.map((n) => `${n} ${growth[n].toFixed(1)}`).join(', '), '< 50', names.every((n) => growth[n] < 50)],
    ['event-loop delay p99 (ms, over 5 s windows; worst window)', `${loopP99.toFixed(1)} (worst ${Math.max(...loops).toFixed(1)})`, '< 50', loopP99 < 50],
    ['slots held at the end (Redis leases, in-flight gauge)', `${r.slotsHeld}, ${r.metrics.inFlight}`, '0, 0', r.slotsHeld === 0 && r.metrics.inFlight === 0],
  ];
  const md = `# Soak: two replicas on Redis under faults

\`${r.command}\` (Node ${r.node}, this repository's 2-core machine; the gateways, Redis, both fake
accounts and the load generator share the 2 cores). Two gateway replicas on one Redis, an
open-loop load generator alternating between them (half JSON, half SSE chat calls) at
${r.capacity ? `60% of the capacity it measured first (${r.capacity.toFixed(0)} req/s closed-loop, 64 callers, 15 s, faults on): ` : ''}**${r.rate} req/s** for ${r.minutes} min,
against two fake accounts (\`scripts/soak/upstream.mjs\`, their own flags) that each inject 1%
connection resets, 1% mid-stream stalls (3 s, past the gateway's 1.5 s idle timeout), 1%
429 (Retry-After: 1) and 1% 500. Redis (append-only, fsync always) is killed 40% in and
restarted 10 s later; the config is hot-reloaded (SIGHUP) 60% in. Every request the load
generator sent, including the capacity run, is counted.

## Targets

| check | result | target | |
|---|---|---|---|
${checks.map(([what, got, want, ok]) => `| ${what} | ${got} | ${want} | ${ok ? 'pass' : '**FAIL**'} |`).join('\n')}

## Requests

| sent | answered | complete | failed, upstream-caused | failed, gateway-caused |
|---|---|---|---|---|
| ${r.sent} | ${r.answered} | ${r.ok} | ${r.upstreamCaused} | ${r.gatewayCaused} |

A failure is upstream-caused when the gateway's answer names an upstream failure (an
\`upstream_*\` code in a 5xx or in a stream's error event: a stall after the first byte
cannot be retried; or the provider's 429 relayed once both accounts refused).

| outcome: cause | requests |
|---|---|
${
  Object.entries(r.causes)
    .sort((a, b) => b[1] - a[1])
    .map(([c, k]) => `| ${c} | ${k} |`)
    .join('\n') || '| (none) | 0 |'
}

What the fake accounts did: ${r.upstreams.map((u, i) => `acct-${'ab'[i]} ${u}`).join('; ')}.

## Over time

![RSS and event-loop delay per replica](soak-chart.svg)

${r.events.map((e) => `- ${e.t.toFixed(0)} s: ${e.what}`).join('\n')}

Raw numbers: \`docs/bench/soak.json\`.
`;
  writeFileSync(join(out, 'soak.md'), md);
  writeFileSync(join(out, 'soak-chart.svg'), chart(r.samples, r.events, names));
  return { pass: checks.every((c) => c[3]), lines: checks.map(([what, got, , ok]) => `${ok ? 'ok' : 'FAIL'} ${what}: ${got}`) };
}
