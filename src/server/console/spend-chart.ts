/**
 * The spend page's chart, hand-rolled SVG (no charting library: the page loads nothing from
 * outside and needs no build step): spend over time as stacked columns, one series per
 * group, biggest spender at the bottom, every period of the range on the x axis (periods
 * without rows are empty columns). Inlined into `spend-script.ts`'s IIFE.
 *
 * Names it defines for the page script:
 *   `periods(fromMs, toMs, granularity)` -> the UTC period starts (ms) covering the range,
 *       truncated like PostgreSQL's `date_trunc(granularity, ts, 'UTC')` (hour, day, month);
 *   `periodLabel(ms, granularity)` -> `2026-12-02 15:00` / `2026-12-02` / `2026-12` (UTC);
 *   `drawChart(svg, legend, series, starts, granularity)` draws `series`
 *       (`[{ label, other, color, total, byPeriod: Map<ms, usd> }]`, in stacking order) into
 *       the `<svg>` and its legend `<ul>`: each series is one `<g class="series">` with
 *       `data-series` = its label, a `<title>` per column segment; all text via textContent.
 */

/** Series colours, in order (the 10th is the "other" series'). */
export const SPEND_COLORS = ['#0b5cad', '#d4731a', '#1a7f37', '#8250df', '#cf222e', '#0a8a8a', '#9a6700', '#bf3989', '#2f81f7', '#8c959f'] as const;

/** Chart geometry in SVG user units (the element scales to the page width). */
const W = 960;
const H = 280;
const M = { top: 12, right: 12, bottom: 30, left: 76 };

/** The chart part of the spend script, as inlined. */
export const SPEND_CHART = `
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const HOUR = 3600000;
  const DAY = 86400000;

  function svgEl(name, attrs, parent) {
    const el = document.createElementNS(SVG_NS, name);
    for (const k of Object.keys(attrs)) el.setAttribute(k, String(attrs[k]));
    if (parent) parent.appendChild(el);
    return el;
  }
  function svgText(parent, x, y, text, anchor, cls) {
    const t = svgEl('text', { x: x, y: y, 'text-anchor': anchor }, parent);
    if (cls) t.setAttribute('class', cls);
    t.textContent = text;
    return t;
  }

  function truncUtc(t, g) {
    const d = new Date(t);
    if (g === 'month') return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    if (g === 'day') return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours());
  }
  function nextUtc(t, g) {
    if (g === 'month') {
      const d = new Date(t);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    }
    return t + (g === 'day' ? DAY : HOUR);
  }
  function periods(from, to, g) {
    const out = [];
    for (let t = truncUtc(from, g); t < to; t = nextUtc(t, g)) out.push(t);
    return out;
  }
  function periodLabel(t, g) {
    const iso = new Date(t).toISOString();
    if (g === 'month') return iso.slice(0, 7);
    if (g === 'day') return iso.slice(0, 10);
    return iso.slice(0, 10) + ' ' + iso.slice(11, 16);
  }

  /** The smallest 1, 2, 2.5 or 5 times a power of ten at or above v (1e-6 for nothing). */
  function niceMax(v) {
    if (!(v > 0)) return 0.000001;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v * (1 - 1e-9)) return m * p;
    return 10 * p;
  }
  const axisUsd = (n) => (n === 0 ? '$0' : '$' + String(Number(n.toPrecision(3))));

  function drawChart(svg, legend, series, starts, g) {
    const W = ${W};
    const H = ${H};
    const L = ${M.left};
    const R = ${M.right};
    const T = ${M.top};
    const B = ${M.bottom};
    svg.replaceChildren();
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    const pw = W - L - R;
    const ph = H - T - B;
    const stack = starts.map(() => 0);
    const index = new Map(starts.map((t, i) => [t, i]));
    for (const s of series) for (const [t, v] of s.byPeriod) if (index.has(t)) stack[index.get(t)] += v;
    const top = niceMax(Math.max(0, ...stack));
    const y = (v) => T + ph - (v / top) * ph;

    const grid = svgEl('g', { class: 'axis' }, svg);
    for (let i = 0; i <= 4; i++) {
      const v = (top * i) / 4;
      svgEl('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), class: i === 0 ? 'base' : 'grid' }, grid);
      svgText(grid, L - 6, y(v) + 4, axisUsd(v), 'end');
    }
    const n = Math.max(1, starts.length);
    const bw = pw / n;
    const gap = bw > 4 ? Math.min(bw * 0.2, 8) : 0;
    const every = Math.max(1, Math.ceil(n / 6));
    starts.forEach((t, i) => {
      if (i % every !== 0) return;
      svgText(grid, L + i * bw + bw / 2, H - B + 16, periodLabel(t, g), 'middle');
    });

    const base = starts.map(() => 0);
    for (const s of series) {
      const gs = svgEl('g', { class: 'series', fill: s.color }, svg);
      gs.dataset.series = s.label;
      if (s.other) gs.dataset.other = 'true';
      starts.forEach((t, i) => {
        const v = s.byPeriod.get(t) || 0;
        if (!(v > 0)) return;
        const y0 = y(base[i]);
        const y1 = y(base[i] + v);
        base[i] += v;
        const r = svgEl('rect', { x: L + i * bw + gap / 2, y: y1, width: Math.max(1, bw - gap), height: Math.max(0.5, y0 - y1) }, gs);
        r.dataset.period = new Date(t).toISOString();
        const tip = svgEl('title', {}, r);
        tip.textContent = s.label + ' \\u00b7 ' + periodLabel(t, g) + ' UTC: ' + usd(v);
      });
    }
    if (series.length === 0) svgText(svg, L + pw / 2, T + ph / 2, 'No spend recorded in this range.', 'middle', 'none');

    legend.replaceChildren(
      ...series.map((s) => {
        const li = document.createElement('li');
        li.dataset.series = s.label;
        const sw = svgEl('svg', { width: 12, height: 12, viewBox: '0 0 12 12', 'aria-hidden': 'true' }, li);
        svgEl('rect', { width: 12, height: 12, rx: 2, fill: s.color }, sw);
        const name = document.createElement('span');
        name.className = 'name' + (s.other || s.none ? ' muted' : '');
        name.textContent = s.label;
        const total = document.createElement('span');
        total.className = 'muted';
        total.textContent = usd(s.total);
        li.append(name, ' ', total);
        return li;
      }),
    );
  }
`;
