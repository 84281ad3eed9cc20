/**
 * The admin console's pages (on the admin listener): `GET /console`, the live page, and
 * `GET /console/spend` (spend-page.ts). Each is one static HTML document with its
 * stylesheet and script inline, no external assets (the gateway may run offline). A page
 * asks once for the admin key (kept in sessionStorage for the tab, so one sign-in serves
 * both tabs), then reads its admin endpoints with `Authorization: Bearer <admin key>`.
 * Every value is written with `textContent`, never as HTML.
 *
 * Kept as TypeScript modules so the build ships them without copying assets: the
 * stylesheet in `style.ts`, the scripts in `script.ts` and
 * `spend-script.ts`, the documents and their Content-Security-Policy (exactly the
 * page's script and the stylesheet, by SHA-256 hash) here.
 */
import { createHash } from 'node:crypto';
import { CONSOLE_SCRIPT } from './script.js';
import { CONSOLE_STYLE } from './style.js';

export { CONSOLE_DATA_PATH, CONSOLE_POLL_MS } from './script.js';

/** Path of the spend page. */
export const CONSOLE_SPEND_PATH = '/console/spend';

const REQUEST_HEAD = `<tr><th class="num">Time</th><th>Request id</th><th>Key</th><th>Model</th><th>Upstream</th><th class="num">Status</th><th>Outcome</th><th class="num">Duration</th><th class="num">TTFT</th><th class="num">Tokens in / out</th><th class="num">Cost</th><th>Markers</th></tr>`;

const sha256 = (s: string): string => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`;

/**
 * A console page's Content-Security-Policy: nothing but `script` and the console
 * stylesheet (by hash) and same-origin fetches.
 */
export function consoleCsp(script: string): string {
  return [
    "default-src 'none'",
    `script-src ${sha256(script)}`,
    `style-src ${sha256(CONSOLE_STYLE)}`,
    "connect-src 'self'",
    'img-src data:',
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const TABS = [
  ['live', '/console', 'Live'],
  ['spend', CONSOLE_SPEND_PATH, 'Spend'],
] as const;

/**
 * A whole console page: the header with the tabs (`tab` marked current), the login form,
 * `main` (HTML of the page's own sections, inside `<main id="main" hidden>`) and `script`.
 */
export function consolePage(tab: (typeof TABS)[number][0], title: string, main: string, script: string): string {
  const nav = TABS.map(([id, href, label]) => `<a href="${href}"${id === tab ? ' aria-current="page"' : ''}>${label}</a>`).join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<link rel="icon" href="data:,">
<style>${CONSOLE_STYLE}</style>
</head>
<body>
<header><h1>Switchyard console</h1><nav>${nav}</nav><span id="store" class="muted"></span><span id="status"></span><button id="signout" type="button" hidden>Sign out</button></header>
<form id="login" hidden>
<label for="key">Admin key</label>
<input id="key" name="key" type="password" autocomplete="off" spellcheck="false" required>
<button type="submit">Open console</button>
<p class="muted">The key stays in this tab (sessionStorage) and is sent only to this gateway's admin listener.</p>
<p id="login-error" class="error" role="alert"></p>
</form>
<main id="main" hidden>
${main}
</main>
<script>${script}</script>
</body>
</html>
`;
}

/** The live page's Content-Security-Policy. */
export const CONSOLE_CSP = consoleCsp(CONSOLE_SCRIPT);

/** The live page. */
export const CONSOLE_HTML = consolePage(
  'live',
  'Switchyard console',
  `<section><h2>Overview <span class="muted">(since start, this replica)</span></h2>
<table id="totals"><thead></thead><tbody></tbody></table></section>
<section><h2>Upstreams</h2>
<table id="upstreams"><thead><tr><th>Upstream</th><th>Provider</th><th>Mode</th><th>Model</th><th>Upstream model</th><th>Circuit</th><th class="num">In flight / learned limit</th><th class="num">Queued</th><th class="num">Deep / learned limit</th><th class="num">Latency est.</th><th class="num">Attempts (1 min)</th><th class="num">Error rate</th></tr></thead><tbody></tbody></table></section>
<section><h2>Recent requests</h2><p id="recent-note" class="muted"></p>
<table id="recent"><thead>${REQUEST_HEAD}</thead><tbody></tbody></table></section>
<section><h2>Sheds and fallbacks</h2>
<table id="reroute-counts"><thead><tr><th>Kind</th><th>Model</th><th class="num">Count</th></tr></thead><tbody></tbody></table>
<h3>Recent rerouted requests</h3>
<table id="reroute-recent"><thead>${REQUEST_HEAD}</thead><tbody></tbody></table></section>
<section><h2>Spend per key <span class="muted">(today, UTC)</span></h2>
<table id="keys"><thead><tr><th>Key</th><th class="num">Spend today</th><th class="num">Budget</th><th class="num">Requests / min</th><th class="num">Tokens / min</th></tr></thead><tbody></tbody></table></section>`,
  CONSOLE_SCRIPT,
);
