// Tables, the verdict against the burst-control targets, docs/clustering.md and the SVG chart
// of the burst benchmark (scripts/bench-clustering.mjs); all derived from the JSON report, so
// `--render` can redo them.
import { writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const ARM_NAMES = {
  uncongested: 'uncongested',
  direct: 'direct (1 account)',
  one: 'Switchyard, defaults',
  two: 'Switchyard x2 + Redis, defaults',
  reference: 'Switchyard, limits typed in',
};

/** Derived numbers of one arm against its shape's uncongested baseline. */
export function derive(rep, a) {
  const base = rep.baselines[a.shape];
  const caps = rep.parameters.provider.caps ?? [];
  const capOf = (acct) => caps[Number(acct.replace('acct-', '')) - 1] ?? rep.parameters.provider.cap;
  const ratio = base && base.p99_s > 0 ? a.latency_s.p99 / base.p99_s : NaN;
  // The most deep steps the accounts' real capacity allows to be served by a reasoning model.
  const allowed = Math.min(a.steps_run, Math.floor((a.sum_caps * a.wall_s) / base.mean_step_s));
  const share = allowed > 0 ? a.reasoning_steps / allowed : NaN;
  let settle = null;
  if (a.limit_trace?.length) {
    const accts = Object.keys(a.limit_trace.at(-1).limits).filter((k) => k.startsWith('acct-'));
    let lastOff = -1;
    a.limit_trace.forEach((s, i) => {
      if (accts.some((k) => s.limits[k] === undefined || Math.abs(s.limits[k] - capOf(k)) > 1)) lastOff = i;
    });
    settle = lastOff === -1 ? 0 : lastOff === a.limit_trace.length - 1 ? Infinity : a.limit_trace[lastOff + 1].t;
  }
  const p99Target = a.agents <= 8 ? 1.5 : 2;
  const checks = {
    chains: a.chain_success >= 0.99,
    p99: ratio <= p99Target,
    reasoning: share >= 0.9,
    no_429: a.client_429s === 0 && a.client_budget_exhausted === 0,
  };
  return { ratio, p99Target, allowed, share, settle, checks, pass: Object.values(checks).every(Boolean) };
}

const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : '–');
const pctStr = (x) => (Number.isFinite(x) ? `${(x * 100).toFixed(x >= 0.995 && x < 1 ? 1 : 0)}%` : '–');
const settleStr = (s) => (s === null ? '–' : s === Infinity ? 'never' : `${s.toFixed(1)} s`);
const rungStr = (r) =>
  Object.entries(r ?? {})
    .map(([k, v]) => `${k} ${v}`)
    .join(', ') || '–';

function rows(rep) {
  return rep.arms
    .filter((a) => a.arm !== 'uncongested')
    .map((a) => {
      const d = derive(rep, a);
      const sent = Object.values(a.provider ?? {}).reduce((n, s) => n + (a.shape === '429' ? s.throttled : s.stalled), 0);
      const gateway = a.arm === 'one' || a.arm === 'two';
      return [
        a.shape,
        String(a.agents),
        ARM_NAMES[a.arm],
        `${pctStr(a.chain_success)} (${a.chains_ok}/${a.chains})`,
        `${f2(a.latency_s.p50)} / ${f2(a.latency_s.p95)} / ${f2(a.latency_s.p99)}`,
        `${f2(d.ratio)}×`,
        `${a.reasoning_steps} / ${d.allowed} (${pctStr(d.share)})`,
        rungStr(a.shed_rungs),
        `${a.client_429s} / ${sent}`,
        settleStr(d.settle),
        gateway
          ? d.pass
            ? 'pass'
            : `FAIL: ${Object.entries(d.checks)
                .filter(([, ok]) => !ok)
                .map(([k]) => k)
                .join(', ')}`
          : '',
      ];
    });
}
const HEAD = [
  'shape',
  'agents',
  'arm',
  'chains ok',
  'step p50 / p95 / p99 s',
  'p99 ÷ uncongested',
  'deep steps by reasoning / capacity allows',
  'sheds by rung',
  '429s client / throttles by provider',
  'limit settled',
  'targets',
];

function textTable(head, body) {
  const w = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].length)));
  const line = (r) => r.map((c, i) => c.padEnd(w[i])).join('  ');
  return [line(head), w.map((n) => '-'.repeat(n)).join('  '), ...body.map(line)].join('\n');
}
function mdTable(head, body) {
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...body.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

/** Prints the table; with `docs`, writes docs/clustering.md and docs/clustering-latency.svg. */
export function present(rep, { root, docs, outJson }) {
  const body = rows(rep);
  const base = Object.entries(rep.baselines)
    .map(([s, b]) => `${s}: uncongested p99 ${f2(b.p99_s)} s, mean step ${f2(b.mean_step_s)} s`)
    .join('; ');
  process.stdout.write(
    `\n${textTable(HEAD, body)}\n\n${base}\n${outJson ? `report: ${relative(root, outJson)}  ` : ''}(run took ${rep.elapsed_s.toFixed(0)} s)\n`,
  );
  if (!docs) return;
  writeFileSync(join(root, 'docs', 'clustering-latency.svg'), svgChart(rep));
  writeFileSync(join(root, 'docs', 'clustering.md'), markdown(rep, mdTable(HEAD, body), base));
  process.stdout.write('wrote docs/clustering.md, docs/clustering-latency.svg\n');
}

/**
 * p99 step latency per load and arm, one panel per throttle shape, with each load's target
 * (1.5× or 2× the uncongested p99) dashed. Hand-written SVG on purpose: a few dozen rects
 * and labels need no charting library, and the file stays small, deterministic and diffable.
 */
function svgChart(rep) {
  const shapes = [...new Set(rep.arms.map((a) => a.shape))];
  const arms = ['direct', 'one', 'two', 'reference'].filter((k) => rep.arms.some((a) => a.arm === k));
  const loads = [...new Set(rep.arms.filter((a) => a.arm !== 'uncongested').map((a) => a.agents))];
  const colors = { direct: '#d62728', one: '#1f77b4', two: '#2ca02c', reference: '#9e9e9e' };
  const W = 420 * shapes.length + 40;
  const H = 360;
  const m = { top: 70, bottom: 46, left: 50 };
  const plotH = H - m.top - m.bottom;
  const all = rep.arms.filter((a) => a.arm !== 'uncongested').map((a) => a.latency_s.p99);
  const top = Math.max(4, Math.ceil(Math.min(Math.max(...all), 30)));
  const y = (v) => m.top + plotH - (Math.min(v, top) / top) * plotH;
  const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="-apple-system, Segoe UI, Helvetica, Arial, sans-serif" font-size="12">`,
  ];
  out.push('<!-- Written by scripts/bench/clustering-report.mjs from docs/bench/clustering.json. -->');
  out.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`);
  out.push(`<text x="${m.left}" y="22" font-size="15" font-weight="600">p99 step latency (s) by load; dashed: the target (1.5× / 2× uncongested p99)</text>`);
  arms.forEach((k, j) => {
    out.push(
      `<rect x="${m.left + j * 190}" y="34" width="12" height="12" fill="${colors[k]}"/><text x="${m.left + j * 190 + 16}" y="44">${esc(ARM_NAMES[k])}</text>`,
    );
  });
  shapes.forEach((shape, si) => {
    const x0 = m.left + si * 420;
    const plotW = 380;
    const base = rep.baselines[shape]?.p99_s ?? 0;
    for (let v = 0; v <= top; v += top > 10 ? 5 : 1) {
      out.push(`<line x1="${x0}" x2="${x0 + plotW}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="${v === 0 ? '#333' : '#eee'}"/>`);
      if (si === 0 || v === 0) out.push(`<text x="${x0 - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end" fill="#555">${v}</text>`);
    }
    out.push(
      `<text x="${x0 + plotW / 2}" y="${H - 8}" text-anchor="middle" font-weight="600">${esc(shape === '429' ? '429 above the cap' : 'first-token stall above the cap')}</text>`,
    );
    const gw = plotW / loads.length;
    const bw = Math.min(22, (gw * 0.8) / arms.length);
    loads.forEach((load, li) => {
      const cx = x0 + gw * li + gw / 2;
      out.push(`<text x="${cx.toFixed(1)}" y="${H - m.bottom + 16}" text-anchor="middle" fill="#555">${load} agents</text>`);
      const target = base * (load <= 8 ? 1.5 : 2);
      out.push(
        `<line x1="${(cx - gw * 0.45).toFixed(1)}" x2="${(cx + gw * 0.45).toFixed(1)}" y1="${y(target).toFixed(1)}" y2="${y(target).toFixed(1)}" stroke="#333" stroke-dasharray="4 3"/>`,
      );
      arms.forEach((k, j) => {
        const a = rep.arms.find((r) => r.shape === shape && r.agents === load && r.arm === k);
        if (!a) return;
        const v = a.latency_s.p99;
        const x = cx + (j - arms.length / 2) * bw;
        out.push(
          `<rect x="${x.toFixed(1)}" y="${y(v).toFixed(1)}" width="${(bw - 2).toFixed(1)}" height="${(y(0) - y(v)).toFixed(1)}" fill="${colors[k]}"><title>${esc(a.label)}: p99 ${v.toFixed(2)} s, chains ok ${(a.chain_success * 100).toFixed(1)}%</title></rect>`,
        );
        if (v > top) out.push(`<text x="${(x + bw / 2).toFixed(1)}" y="${(y(top) - 3).toFixed(1)}" text-anchor="middle" font-size="10">${v.toFixed(0)}</text>`);
      });
    });
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

const capsText = (p) => (p.caps ? String(p.caps).split(',').join(', ') : String(p.cap));

function markdown(rep, table, base) {
  const p = rep.parameters.provider;
  const gwArms = rep.arms.filter((a) => a.arm === 'one' || a.arm === 'two');
  const passed = gwArms.filter((a) => derive(rep, a).pass).length;
  return `# Reasoning bursts: throttling accounts the gateway is not told about

Generated by \`${rep.command}\` (as \`npm run bench:clustering\`) on ${rep.generated_at.slice(0, 10)} (git ${rep.git.rev ?? '?'}${rep.git.dirty ? ', uncommitted src changes' : ''}; Node ${rep.machine.node}, ${rep.machine.cpus} CPUs); the run took ${Math.round(rep.elapsed_s / 60)} min. Raw numbers, including each arm's learned-limit trace: [bench/clustering.json](bench/clustering.json).

\`\`\`bash
npm run bench:clustering                     # builds, then runs scripts/bench-clustering.mjs
node scripts/bench-clustering.mjs --quick    # a smoke run (fewer chains, writes under .bench/)
\`\`\`

Agents run chains of ${rep.parameters.steps_per_chain} streamed, tool-calling, \`reasoning_effort: high\` steps through the
official \`openai\` client (default retries: 2, \`Retry-After\` honoured); a chain fails at its
first failed step. The provider is \`scripts/bench/throttled-provider.mjs\`, not the gateway's
simulator: ${p.accounts} accounts, throttling above **${capsText(p)} calls in flight** (each its own cap), either with a 429
(\`Retry-After: ${p.retry_after_s}\`) or by stalling the first event ${p.stall_ms / 1000} s; ${p.ttft_ms} ms to the first event and
${p.event_ms} ms between events otherwise. A second, unthrottled provider serves the cheap model.
The gateway's config names the accounts and models and nothing else: no \`capacity\`, no
\`max_concurrency\`, no window (printed below). Every gateway arm starts cold (new processes,
Redis flushed), so the learning is inside the measurement. The reference arm is the same
config plus \`capacity: { start: <cap>, ceiling: <cap> }\` per account, with that account's real cap.
The caps differ from each other and, but for the first, from the gateway's starting guess
(4), so the defaults arms must learn both down and up.

**Targets** (the defaults arms): chains ok ≥ 99%; p99 ≤ 1.5× the uncongested p99 at 8 agents,
≤ 2× at 16 and 32; deep steps served by a reasoning model ≥ 90% of what the accounts' real
capacity allows (sum of real caps × the arm's wall time ÷ the mean uncongested step time,
capped at the steps run); no 429 or \`retry_budget_exhausted\` reaching the client.
**${passed} of ${gwArms.length} defaults arms meet all four.**

![p99 step latency per load and arm](clustering-latency.svg)

## Results

${table}

Baselines — ${base}. "429s client" counts every 429 the client's HTTP layer saw (retried or
not); "throttles by provider" is the provider's own count of 429s sent or calls stalled.
"limit settled" is when every account's learned limit (sampled from \`/metrics\` every 200 ms)
came within ±1 of the real cap and stayed there. Sheds by rung are
\`switchyard_sheds_total\` summed over the replicas (\`wait\`: waited for a place,
\`fallback\`: another reasoning model, \`downgrade\`: the non-reasoning fallback, \`reject\`: 429).

## Reading

- "limit settled: never" where nothing throttled (8 agents: demand stays below the accounts'
  real capacity, so there is nothing to learn from and the limits keep the starting guess,
  which serves every step by the reasoning model anyway).
- Where the reasoning share falls short of 90%, the shortfall is places left idle: the
  seconds a stalled call holds its place before it is seen (the stall threshold is at least
  1 s), a limit cut one below the real cap by a stall that was not the provider's (a first
  event late on a saturated 2-core machine running two gateways, the provider and the
  agents) until the next probe raises it again, and the start (limits grow from the guess of
  4) and end (the last chains finish with fewer agents than places) of each arm. The
  reference arm, with the real caps typed in, shows what the same workload gives when
  nothing has to be learned.

## The gateway config (all arms but the reference)

\`\`\`yaml
${rep.parameters.gateway_config.trim()}
\`\`\`
`;
}
