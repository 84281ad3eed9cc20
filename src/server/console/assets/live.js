/*
 * The console's live page script (`GET /console`, inlined by page.ts and allowed by its
 * hash in the page's CSP): asks once for the admin key (kept in sessionStorage for the tab;
 * the session and table helpers are common.js), then polls the data endpoint (DATA, the
 * route in routes.ts) with `Authorization: Bearer <admin key>` and redraws the tables.
 * Every value is written with textContent, never as HTML.
 */
/* global $, dash, int, usd, ms, pct, clock, cell, row, fill, setStatus, showMain, adminGet, session */
(() => {
  'use strict';
  // @include common.js

  /** Milliseconds between two polls of the data endpoint. */
  const POLL_MS = 1500;
  /** The data endpoint: CONSOLE_DATA_PATH in routes.ts. */
  const DATA = '/admin/console.json';
  let timer = null;
  let running = false;

  function marks(r) {
    const td = cell('', 'marks', 'marks');
    td.textContent = '';
    const add = (text, cls) => {
      const s = document.createElement('span');
      s.className = 'mark ' + cls;
      s.textContent = text;
      td.appendChild(s);
    };
    const arrow = (s) => s.split('->').join(' → ');
    if (r.fallback) add('fallback ' + arrow(r.fallback), 'info');
    if (r.shed) add('shed ' + arrow(r.shed), r.shed === 'rejected' ? 'bad' : 'warn');
    if (r.attempts > 1) add('attempts ' + r.attempts, 'muted');
    if (r.tokens_estimated) add('est. tokens', 'muted');
    if (!td.firstChild) td.textContent = dash;
    return td;
  }

  const STATE = { healthy: 'ok', probing: 'warn', cooling: 'bad' };
  const OUTCOME = {
    ok: 'ok',
    client_error: 'warn',
    client_aborted: 'muted',
    upstream_error: 'bad',
    gateway_shed: 'warn',
    gateway_refused: 'warn',
    gateway_error: 'bad',
  };
  const MODE = { live: 'ok', simulated: 'warn', off: 'muted' };

  function heat(c) {
    if (!c) return cell(dash, 'num', 'heat');
    const text = c.limit > 0 ? c.deep_in_flight + ' / ' + c.limit : String(c.deep_in_flight);
    const ratio = c.limit > 0 ? c.deep_in_flight / c.limit : 0;
    return cell(text, 'num ' + (ratio >= 1 ? 'bad' : ratio >= 0.5 ? 'warn' : 'ok'), 'heat');
  }

  function renderTotals(d) {
    const t = d.totals;
    const items = [
      ['requests', 'Requests', int(t.requests), ''],
      ['ok', 'OK', int(t.by_outcome.ok || 0), 'ok'],
      ['client_error', 'Client errors', int(t.by_outcome.client_error || 0), (t.by_outcome.client_error || 0) > 0 ? 'warn' : ''],
      ['upstream_error', 'Upstream errors', int(t.by_outcome.upstream_error || 0), (t.by_outcome.upstream_error || 0) > 0 ? 'bad' : ''],
      ['gateway_shed', 'Shed by gateway', int(t.by_outcome.gateway_shed || 0), (t.by_outcome.gateway_shed || 0) > 0 ? 'warn' : ''],
      ['gateway_refused', 'Refused by gateway', int(t.by_outcome.gateway_refused || 0), (t.by_outcome.gateway_refused || 0) > 0 ? 'warn' : ''],
      ['gateway_error', 'Gateway errors', int(t.by_outcome.gateway_error || 0), (t.by_outcome.gateway_error || 0) > 0 ? 'bad' : ''],
      ['client_aborted', 'Aborted', int(t.by_outcome.client_aborted || 0), ''],
      ['in_flight', 'In flight', int(t.in_flight), ''],
      ['retries', 'Retries', int(t.retries), ''],
      ['fallbacks', 'Fallbacks', int(t.fallbacks), t.fallbacks > 0 ? 'info' : ''],
      ['sheds', 'Sheds', int(t.sheds), t.sheds > 0 ? 'warn' : ''],
      ['limit_rejections', 'Key-limit 429s', int(t.limit_rejections), t.limit_rejections > 0 ? 'warn' : ''],
      ['spend_today', 'Spend today', usd(t.spend_today_usd), ''],
    ];
    const head = document.createElement('tr');
    const vals = document.createElement('tr');
    for (const [key, label, value, cls] of items) {
      const th = document.createElement('th');
      th.className = 'num';
      th.textContent = label;
      head.appendChild(th);
      const td = cell(value, 'num' + (cls ? ' ' + cls : ''));
      td.dataset.total = key;
      vals.appendChild(td);
    }
    $('totals').tHead.replaceChildren(head);
    $('totals').tBodies[0].replaceChildren(vals);
  }

  function renderUpstreams(d) {
    const rows = [];
    for (const u of d.upstreams) {
      const targets = d.targets.filter((t) => t.upstream === u.id);
      const head = [cell(u.id, null, 'upstream'), cell(u.provider, null, 'provider'), cell(u.mode, MODE[u.mode] || '', 'mode')];
      if (targets.length === 0) {
        const td = cell('no model uses this upstream', 'empty');
        td.colSpan = 9;
        rows.push(row([...head, td], { upstream: u.id }));
        continue;
      }
      for (const t of targets) {
        const state = t.shared_cooling_until && t.state === 'healthy' ? 'cooling (shared until ' + clock(t.shared_cooling_until) + ')' : t.state;
        rows.push(
          row(
            [
              ...head.map((c) => c.cloneNode(true)),
              cell(t.model, null, 'model'),
              cell(t.upstream_model, 'mono', 'upstream_model'),
              cell(state, STATE[t.state] || '', 'state'),
              cell(
                int(t.in_flight) +
                  ' / ' +
                  int(t.call_limit ?? t.max_concurrency) +
                  (t.call_limit !== undefined && t.call_limit < t.max_concurrency ? ' (max ' + int(t.max_concurrency) + ')' : ''),
                'num',
                'in_flight',
              ),
              cell(int(t.queued), 'num', 'queued'),
              heat(t.capacity),
              cell(ms(t.latency_ms), 'num', 'latency'),
              cell(int(t.recent && t.recent.attempts), 'num', 'attempts'),
              cell(pct(t.recent && t.recent.error_rate), 'num' + (t.recent && t.recent.error_rate > 0 ? ' bad' : ''), 'error_rate'),
            ],
            { upstream: u.id, target: t.target },
          ),
        );
      }
    }
    fill('upstreams', rows, 12, 'No upstreams configured.');
  }

  function requestRow(r) {
    const tok = r.tokens;
    return row(
      [
        cell(clock(r.finished_at), 'num', 'time'),
        cell(r.request_id, 'mono', 'request_id'),
        cell(r.key, null, 'key'),
        cell(r.model, null, 'model'),
        cell(r.upstream, null, 'upstream'),
        cell(r.status, 'num ' + (r.status >= 500 ? 'bad' : r.status >= 400 ? 'warn' : 'ok'), 'status'),
        cell(r.outcome + (r.error_class ? ' (' + r.error_class + ')' : ''), OUTCOME[r.outcome] || '', 'outcome'),
        cell(ms(r.duration_ms), 'num', 'duration'),
        cell(r.ttft_ms === null ? dash : ms(r.ttft_ms), 'num', 'ttft'),
        cell(int(tok.input) + ' / ' + int(tok.output), 'num', 'tokens'),
        cell(usd(r.cost_usd), 'num', 'cost'),
        marks(r),
      ],
      { requestId: r.request_id },
    );
  }

  function renderRecent(d) {
    fill('recent', d.recent.map(requestRow), 12, 'No requests yet.');
    $('recent-note').textContent = 'Newest first; ' + int(d.recent.length) + ' shown of ' + int(d.recent_total) + ' since start (this replica).';
  }

  function renderReroutes(d) {
    const counts = [
      ...d.reroutes.fallbacks.map((f) =>
        row([cell('fallback', 'info', 'kind'), cell(f.from + ' \u2192 ' + f.to, null, 'what'), cell(int(f.count), 'num', 'count')]),
      ),
      ...d.reroutes.sheds.map((s) =>
        row([cell('shed', 'warn', 'kind'), cell(s.model + ' (' + s.policy + ')', null, 'what'), cell(int(s.count), 'num', 'count')]),
      ),
    ];
    fill('reroute-counts', counts, 3, 'No fallbacks or sheds since start.');
    fill('reroute-recent', d.reroutes.recent.map(requestRow), 12, 'None among the recent requests.');
  }

  function renderKeys(d) {
    const rows = d.keys.map((k) => {
      const b = k.budget;
      return row(
        [
          cell(k.name, null, 'name'),
          cell(usd(k.spend_today_usd), 'num' + (k.spend_today_usd > 0 ? ' info' : ''), 'spend_today'),
          cell(b ? usd(b.spent_usd) + ' of ' + usd(b.amount_usd) + ' / ' + b.period : dash, 'num' + (b && b.remaining_usd <= 0 ? ' bad' : ''), 'budget'),
          cell(k.rpm ? int(k.rpm.used) + ' / ' + int(k.rpm.limit) : dash, 'num', 'rpm'),
          cell(k.tpm ? int(k.tpm.used) + ' / ' + int(k.tpm.limit) : dash, 'num', 'tpm'),
          cell(k.cache_read_share === null ? dash : int(k.cache_read_tokens) + ' (' + pct(k.cache_read_share) + ')', 'num', 'cache_reads'),
        ],
        { key: k.name },
      );
    });
    fill('keys', rows, 6, 'No client keys configured.');
  }

  function render(d) {
    $('store').textContent = 'store: ' + d.store;
    renderTotals(d);
    renderUpstreams(d);
    renderRecent(d);
    renderReroutes(d);
    renderKeys(d);
  }

  function stop() {
    running = false;
    if (timer !== null) clearTimeout(timer);
    timer = null;
  }

  async function poll() {
    timer = null;
    try {
      const res = await adminGet(DATA, stop);
      if (res === null) return;
      if (!res.ok) throw new Error('HTTP ' + res.status);
      const data = await res.json();
      if (!running) return;
      render(data);
      showMain();
      setStatus('Updated ' + clock(Date.now()) + ', every ' + POLL_MS / 1000 + ' s', false);
    } catch (err) {
      setStatus('Cannot reach the gateway (' + (err && err.message ? err.message : err) + '); retrying', true);
    }
    if (running) timer = setTimeout(poll, POLL_MS);
  }

  function start() {
    stop();
    running = true;
    void poll();
  }

  session(start, stop);
})();
