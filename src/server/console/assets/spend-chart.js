/*
 * The spend page's chart, hand-rolled SVG (no charting library: the page loads nothing from
 * outside and needs no build step): spend over time as stacked columns, one series per
 * group, biggest spender at the bottom, every period of the range on the x axis (periods
 * without rows are empty columns). Inlined where spend.js says `// @include spend-chart.js`
 * (page.ts), inside its IIFE; uses `usd` from common.js. All text via textContent.
 */
/* global usd */
/* exported DAY, periods, periodLabel, drawChart */

/**
 * A series as drawn: `byPeriod` maps a period start (ms) to its spend (USD).
 * @typedef {{ label: string, none?: boolean, other: boolean, color: string, total: number, byPeriod: Map<number, number> }} Series
 */

const SVG_NS = 'http://www.w3.org/2000/svg';
const HOUR = 3600000;
const DAY = 86400000;

/**
 * A new SVG element with these attributes, appended to `parent` when given.
 * @param {string} name
 * @param {Record<string, string | number>} attrs
 * @param {Element} [parent]
 * @returns {SVGElement}
 */
function svgEl(name, attrs, parent) {
  const el = document.createElementNS(SVG_NS, name);
  for (const k of Object.keys(attrs)) el.setAttribute(k, String(attrs[k]));
  if (parent) parent.appendChild(el);
  return el;
}
/**
 * A `<text>` in `parent` at (x, y).
 * @param {Element} parent
 * @param {number} x
 * @param {number} y
 * @param {string} text
 * @param {string} anchor its text-anchor
 * @param {string} [cls]
 * @returns {SVGElement}
 */
function svgText(parent, x, y, text, anchor, cls) {
  const t = svgEl('text', { x: x, y: y, 'text-anchor': anchor }, parent);
  if (cls) t.setAttribute('class', cls);
  t.textContent = text;
  return t;
}

/**
 * The start of the UTC hour, day or month holding `t`, like PostgreSQL's
 * `date_trunc(g, ts, 'UTC')`.
 * @param {number} t
 * @param {string} g
 * @returns {number}
 */
function truncUtc(t, g) {
  const d = new Date(t);
  if (g === 'month') return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  if (g === 'day') return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), d.getUTCHours());
}
/**
 * The start of the period after the one starting at `t`.
 * @param {number} t
 * @param {string} g
 * @returns {number}
 */
function nextUtc(t, g) {
  if (g === 'month') {
    const d = new Date(t);
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  }
  return t + (g === 'day' ? DAY : HOUR);
}
/**
 * The UTC period starts (ms) covering [from, to), the first truncated like truncUtc.
 * @param {number} from
 * @param {number} to
 * @param {string} g hour, day or month
 * @returns {number[]}
 */
function periods(from, to, g) {
  const out = [];
  for (let t = truncUtc(from, g); t < to; t = nextUtc(t, g)) out.push(t);
  return out;
}
/**
 * A period as `2026-12-02 15:00` / `2026-12-02` / `2026-12` (UTC) for hour / day / month.
 * @param {number} t
 * @param {string} g
 * @returns {string}
 */
function periodLabel(t, g) {
  const iso = new Date(t).toISOString();
  if (g === 'month') return iso.slice(0, 7);
  if (g === 'day') return iso.slice(0, 10);
  return iso.slice(0, 10) + ' ' + iso.slice(11, 16);
}

/**
 * The smallest 1, 2, 2.5 or 5 times a power of ten at or above v (1e-6 for nothing).
 * @param {number} v
 * @returns {number}
 */
function niceMax(v) {
  if (!(v > 0)) return 0.000001;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v * (1 - 1e-9)) return m * p;
  return 10 * p;
}
/** @type {(n: number) => string} An axis label in dollars, 3 significant digits. */
const axisUsd = (n) => (n === 0 ? '$0' : '$' + String(Number(n.toPrecision(3))));

/**
 * Draws `series` (in stacking order) into the `<svg>` and its legend `<ul>`: each series is
 * one `<g class="series">` with `data-series` = its label, a `<title>` per column segment.
 * @param {SVGSVGElement} svg
 * @param {HTMLUListElement} legend
 * @param {Series[]} series
 * @param {number[]} starts the period starts (ms), from periods()
 * @param {string} g the granularity
 */
function drawChart(svg, legend, series, starts, g) {
  const W = 960;
  const H = 280;
  const L = 76;
  const R = 12;
  const T = 12;
  const B = 30;
  svg.replaceChildren();
  svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
  const pw = W - L - R;
  const ph = H - T - B;
  const stack = starts.map(() => 0);
  const index = new Map(starts.map((t, i) => [t, i]));
  for (const s of series) {
    for (const [t, v] of s.byPeriod) {
      const i = index.get(t);
      if (i !== undefined) stack[i] += v;
    }
  }
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
      tip.textContent = s.label + ' \u00b7 ' + periodLabel(t, g) + ' UTC: ' + usd(v);
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
