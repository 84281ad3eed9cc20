/**
 * The console's spend page (`GET /console/spend` on the admin listener): spend over time per
 * key, model or tag from the usage ledger (`GET /admin/spend`), the totals with the shed
 * and fallback shares, and the top keys. Static like the live page (page.ts): the
 * document holds no data, its script (`spend-script.ts`) reads the admin API with
 * the admin key; allowed by hash in its own Content-Security-Policy.
 */
import { consoleCsp, consolePage } from './page.js';
import { CONSOLE_SPEND_SCRIPT } from './spend-script.js';

const KEY_HEAD =
  '<tr><th>Key</th><th class="num">Spend</th><th class="num">Share of spend</th><th class="num">Requests</th><th class="num">Input tokens</th>' +
  '<th class="num">Output tokens</th><th class="num">Shed share</th><th class="num">Fallback share</th></tr>';

const MAIN = `<form id="spend-controls" class="controls">
<label>Range <select id="range"><option value="24h" selected>Last 24 hours</option><option value="7d">Last 7 days</option><option value="30d">Last 30 days</option></select></label>
<label>Granularity <select id="granularity"><option value="hour" selected>Hour</option><option value="day">Day</option><option value="month">Month</option></select></label>
<label>Group by <select id="group"><option value="key" selected>Key</option><option value="model">Model</option><option value="tag">Tag</option></select></label>
<label id="tag-field" hidden>Tag name <input id="tag" type="text" placeholder="repo" maxlength="32" autocomplete="off" spellcheck="false"></label>
<button type="submit">Show</button>
</form>
<p id="spend-error" class="error" role="alert"></p>
<section id="ledger-off" hidden>
<h2>No usage ledger</h2>
<p>Spend over time comes from the usage ledger in PostgreSQL, and the gateway cannot read one.</p>
<p>To keep one, set <code>DATABASE_URL</code> to a PostgreSQL database (or <code>ledger.postgres_url</code> in the config) and restart the gateway;
it creates its tables itself. If a ledger is configured, PostgreSQL is not answering now: <code>/readyz</code> shows the ledger's state.</p>
<p class="muted">The gateway said: <span id="ledger-off-detail"></span></p>
</section>
<div id="spend-data" hidden>
<p id="spend-note" class="muted"></p>
<section><h2>Totals</h2>
<table id="spend-totals"><thead></thead><tbody></tbody></table></section>
<section><h2>Spend over time <span id="chart-caption" class="muted"></span></h2>
<figure id="spend-chart"><svg id="chart-svg" role="img" aria-label="Spend over time"></svg><ul id="spend-legend"></ul></figure></section>
<section><h2>Top keys <span class="muted">(by spend in the range)</span></h2>
<table id="top-keys"><thead>${KEY_HEAD}</thead><tbody></tbody><tfoot></tfoot></table></section>
</div>`;

/** The spend page. */
export const CONSOLE_SPEND_HTML = consolePage('spend', 'Switchyard console: spend', MAIN, CONSOLE_SPEND_SCRIPT);

/** The spend page's Content-Security-Policy. */
export const CONSOLE_SPEND_CSP = consoleCsp(CONSOLE_SPEND_SCRIPT);
