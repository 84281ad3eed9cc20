/*
 * The console's spend page script (`GET /console/spend`, inlined by page.ts and allowed by
 * its hash in the page's CSP). Signs in like the live page (common.js), then for the range,
 * granularity and group chosen asks API twice, in parallel:
 *
 *   ?from&to&granularity=<hour|day|month>&group_by=<key|model|tag:<name>>  -> the chart
 *   ?from&to&granularity=none&group_by=key                                  -> totals, top keys
 *
 * and draws the chart (spend-chart.js), the totals (spend, requests, tokens, shed and
 * fallback shares) and the top keys. A 503 `ledger_unavailable` shows how to configure the
 * ledger instead; a 400 shows the API's message. Group values (tag values come from
 * clients) are only ever written with textContent.
 */
/* global $, int, usd, pct, clock, cell, row, emptyRow, fill, setStatus, showMain, adminGet, session, DAY, periods, periodLabel, drawChart */
(() => {
  'use strict';
  // @include common.js
  // @include spend-chart.js

  /** The admin endpoint the page reads (server/admin/spend.ts). */
  const API = '/admin/spend';
  /** Series colours, in order (the 10th is the "other" series'). */
  const COLORS = ['#0b5cad', '#d4731a', '#1a7f37', '#8250df', '#cf222e', '#0a8a8a', '#9a6700', '#bf3989', '#2f81f7', '#8c959f'];
  /** Series drawn on their own; past this the smaller groups are summed as one "other" series. */
  const MAX_SERIES = 9;
  /** Keys listed in the top-keys table (the totals row still counts them all). */
  const TOP_KEYS = 20;
  const RANGES = { '24h': DAY, '7d': 7 * DAY, '30d': 30 * DAY };
  const SUMS = ['cost_usd', 'requests', 'input_tokens', 'cached_tokens', 'output_tokens', 'reasoning_tokens', 'shed', 'fallback'];
  let seq = 0;

  const share = (part, whole) => (whole > 0 ? part / whole : null);
  function sums(rows) {
    const t = {};
    for (const f of SUMS) t[f] = 0;
    for (const r of rows) for (const f of SUMS) t[f] += Number(r[f]) || 0;
    return t;
  }

  /** What the controls ask for, or a message saying what to fix. */
  function question() {
    const by = $('group').value;
    let group = by;
    let label = by;
    if (by === 'tag') {
      const name = $('tag').value.trim();
      if (!name) return 'Enter the name of the tag to group by (for example repo).';
      group = 'tag:' + name;
      label = 'tag ' + name;
    }
    const to = Date.now();
    const from = to - (RANGES[$('range').value] || DAY);
    return { from: from, to: to, granularity: $('granularity').value, group: group, label: label };
  }

  function url(q, granularity, group) {
    return (
      API +
      '?from=' +
      encodeURIComponent(new Date(q.from).toISOString()) +
      '&to=' +
      encodeURIComponent(new Date(q.to).toISOString()) +
      '&granularity=' +
      encodeURIComponent(granularity) +
      '&group_by=' +
      encodeURIComponent(group)
    );
  }

  /** A group's value as shown: null (no such key, model or tag on the rows) is "(no …)". */
  function groupLabel(q, v) {
    if (v !== null && v !== undefined) return String(v);
    return q.group.startsWith('tag:') ? '(no ' + q.label + ')' : '(no ' + q.group + ')';
  }

  function seriesOf(q, data) {
    const by = new Map();
    for (const r of data) {
      const v = r[q.group];
      const k = v === null || v === undefined ? null : String(v);
      if (!by.has(k)) by.set(k, { label: groupLabel(q, k), none: k === null, other: false, total: 0, byPeriod: new Map() });
      const s = by.get(k);
      const t = Date.parse(r.period);
      const c = Number(r.cost_usd) || 0;
      s.total += c;
      s.byPeriod.set(t, (s.byPeriod.get(t) || 0) + c);
    }
    const all = [...by.values()].sort((a, b) => b.total - a.total || (a.label < b.label ? -1 : a.label > b.label ? 1 : 0));
    let shown = all;
    if (all.length > MAX_SERIES + 1) {
      shown = all.slice(0, MAX_SERIES);
      const rest = all.slice(MAX_SERIES);
      const other = { label: 'other (' + rest.length + ' groups)', none: false, other: true, total: 0, byPeriod: new Map() };
      for (const s of rest) {
        other.total += s.total;
        for (const [t, v] of s.byPeriod) other.byPeriod.set(t, (other.byPeriod.get(t) || 0) + v);
      }
      shown.push(other);
    }
    shown.forEach((s, i) => (s.color = s.other ? COLORS[COLORS.length - 1] : COLORS[i % (COLORS.length - 1)]));
    return shown;
  }

  function renderTotals(t, keys) {
    const items = [
      ['cost_usd', 'Spend', usd(t.cost_usd)],
      ['requests', 'Requests', int(t.requests)],
      ['input_tokens', 'Input tokens', int(t.input_tokens)],
      ['cached_tokens', 'Cached', int(t.cached_tokens)],
      ['output_tokens', 'Output tokens', int(t.output_tokens)],
      ['reasoning_tokens', 'Reasoning', int(t.reasoning_tokens)],
      ['shed', 'Shed', int(t.shed)],
      ['shed_share', 'Shed share', pct(share(t.shed, t.requests))],
      ['fallback', 'Fallback', int(t.fallback)],
      ['fallback_share', 'Fallback share', pct(share(t.fallback, t.requests))],
      ['keys', 'Keys', int(keys)],
    ];
    const head = document.createElement('tr');
    const vals = document.createElement('tr');
    for (const [key, label, value] of items) {
      const th = document.createElement('th');
      th.className = 'num';
      th.textContent = label;
      head.appendChild(th);
      const td = cell(value, 'num' + (key === 'shed_share' && t.shed > 0 ? ' warn' : ''));
      td.dataset.total = key;
      vals.appendChild(td);
    }
    $('spend-totals').tHead.replaceChildren(head);
    $('spend-totals').tBodies[0].replaceChildren(vals);
  }

  function keyCells(name, r, whole, none) {
    const c = [
      cell(name, none ? 'muted' : null, 'key'),
      cell(usd(r.cost_usd), 'num', 'cost_usd'),
      cell(pct(share(r.cost_usd, whole)), 'num', 'spend_share'),
      cell(int(r.requests), 'num', 'requests'),
      cell(int(r.input_tokens), 'num', 'input_tokens'),
      cell(int(r.output_tokens), 'num', 'output_tokens'),
      cell(pct(share(r.shed, r.requests)), 'num' + (r.shed > 0 ? ' warn' : ''), 'shed_share'),
      cell(pct(share(r.fallback, r.requests)), 'num' + (r.fallback > 0 ? ' info' : ''), 'fallback_share'),
    ];
    c[6].title = int(r.shed) + ' of ' + int(r.requests) + ' requests shed';
    c[7].title = int(r.fallback) + ' of ' + int(r.requests) + ' requests served by a fallback';
    return c;
  }

  function renderKeys(q, data, t) {
    const kq = { group: 'key', label: 'key' };
    const rows = data
      .slice(0, TOP_KEYS)
      .map((r) => row(keyCells(groupLabel(kq, r.key), r, t.cost_usd, r.key === null), { key: r.key === null ? '' : String(r.key) }));
    if (data.length > TOP_KEYS) rows.push(emptyRow(8, int(data.length - TOP_KEYS) + ' more keys, counted in the totals below'));
    fill('top-keys', rows, 8, 'No requests in this range.');
    $('top-keys').tFoot.replaceChildren(row(keyCells('All keys', t, t.cost_usd, false), { total: 'true' }));
  }

  function render(q, s, k) {
    const t = sums(k.data);
    renderTotals(t, k.data.length);
    renderKeys(q, k.data, t);
    const series = seriesOf(q, s.data);
    drawChart($('chart-svg'), $('spend-legend'), series, periods(q.from, q.to, q.granularity), q.granularity);
    $('chart-svg').setAttribute('aria-label', 'Spend per ' + q.label + ' per ' + q.granularity);
    $('chart-caption').textContent = 'per ' + q.label + ', per ' + q.granularity + ' (UTC)';
    const notes = [periodLabel(q.from, 'hour') + ' to ' + periodLabel(q.to, 'hour') + ' UTC.'];
    if (s.backlog_rows > 0 || k.backlog_rows > 0)
      notes.push(int(Math.max(s.backlog_rows, k.backlog_rows)) + ' finished requests are not in the ledger yet (ledger ' + s.ledger + ').');
    if (s.truncated || k.truncated) notes.push('Too many groups: only the first 10,000 rows are counted; pick a coarser granularity or a shorter range.');
    $('spend-note').textContent = notes.join(' ');
    const fig = $('spend-chart');
    fig.dataset.group = q.group;
    fig.dataset.granularity = q.granularity;
    fig.dataset.from = new Date(q.from).toISOString();
    fig.dataset.to = new Date(q.to).toISOString();
  }

  function ledgerOff(body) {
    $('spend-data').hidden = true;
    $('ledger-off').hidden = false;
    $('ledger-off-detail').textContent = body && body.error && body.error.message ? body.error.message : '';
    setStatus('The usage ledger is unavailable', true);
  }

  async function errorOf(res) {
    const body = await res.json().catch(() => null);
    return { status: res.status, body: body, message: body && body.error && body.error.message ? body.error.message : 'HTTP ' + res.status };
  }

  async function load() {
    const q = question();
    if (typeof q === 'string') {
      $('spend-error').textContent = q;
      $('tag').focus();
      return;
    }
    const my = ++seq;
    setStatus('Loading\u2026', false);
    try {
      const [s, k] = await Promise.all([adminGet(url(q, q.granularity, q.group), stop), adminGet(url(q, 'none', 'key'), stop)]);
      if (s === null || k === null || my !== seq) return;
      showMain();
      const bad = !s.ok ? await errorOf(s) : !k.ok ? await errorOf(k) : null;
      if (my !== seq) return;
      if (bad && bad.status === 503) {
        $('spend-error').textContent = '';
        return ledgerOff(bad.body);
      }
      $('ledger-off').hidden = true;
      if (bad) {
        $('spend-error').textContent = bad.message;
        setStatus('The spend query was refused', true);
        return;
      }
      const [sd, kd] = await Promise.all([s.json(), k.json()]);
      if (my !== seq) return;
      $('spend-error').textContent = '';
      render(q, sd, kd);
      $('spend-data').hidden = false;
      setStatus('Loaded ' + clock(Date.now()) + ' from the ledger', false);
    } catch (err) {
      if (my === seq) setStatus('Cannot reach the gateway (' + (err && err.message ? err.message : err) + ')', true);
    }
  }

  function stop() {
    seq++;
  }

  function start() {
    void load();
  }

  $('group').addEventListener('change', () => {
    const tag = $('group').value === 'tag';
    $('tag-field').hidden = !tag;
    if (tag && !$('tag').value.trim()) return $('tag').focus();
    void load();
  });
  $('range').addEventListener('change', () => void load());
  $('granularity').addEventListener('change', () => void load());
  $('spend-controls').addEventListener('submit', (e) => {
    e.preventDefault();
    void load();
  });

  $('tag-field').hidden = $('group').value !== 'tag';
  session(start, stop);
})();
