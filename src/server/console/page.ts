/**
 * The admin console's pages (on the admin listener): `GET /console`, the live page, and
 * `GET /console/spend`, the spend page. Each is one static HTML document with its
 * stylesheet and script inline, no external assets (the gateway may run offline). A page
 * asks once for the admin key (kept in sessionStorage for the tab, so one sign-in serves
 * both tabs), then reads its admin endpoints with `Authorization: Bearer <admin key>`.
 * Every value is written with `textContent`, never as HTML.
 *
 * The HTML, CSS and scripts are files in `assets/` (assets.ts); this module fills the
 * shell `page.html`'s placeholders (`{{title}}`, `{{nav}}`, `{{style}}`, `{{main}}`,
 * `{{script}}`) and makes each page's Content-Security-Policy: exactly the page's script
 * and the stylesheet, by SHA-256 hashes computed here from what is inlined.
 */
import { createHash } from 'node:crypto';
import { consoleScript, readConsoleAsset } from './assets.js';

/** Path of the spend page. */
export const CONSOLE_SPEND_PATH = '/console/spend';

/** A console page as served. */
export interface ConsolePage {
  html: string;
  /** Its Content-Security-Policy header. */
  csp: string;
}

const sha256 = (s: string): string => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`;

/**
 * A console page's Content-Security-Policy: nothing but `script` and `style` (by hash)
 * and same-origin fetches.
 */
export function consoleCsp(script: string, style: string): string {
  return [
    "default-src 'none'",
    `script-src ${sha256(script)}`,
    `style-src ${sha256(style)}`,
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

/** A tab of the console's header. */
type ConsoleTab = (typeof TABS)[number][0];

/** What a page puts into the shell. */
interface PageParts {
  tab: ConsoleTab;
  title: string;
  /** HTML of the page's own sections, inside `<main id="main" hidden>`. */
  main: string;
  style: string;
  script: string;
}

/**
 * Fills the shell's `{{name}}` placeholders, in one pass (inlined text is not scanned
 * again). The nav marks `tab` current.
 * @throws Error on an unknown placeholder, or a script or stylesheet that would end its element early.
 */
function fillShell(shell: string, parts: PageParts): string {
  if (/<\/script/i.test(parts.script)) throw new Error('a console script contains "</script"');
  if (/<\/style/i.test(parts.style)) throw new Error('the console stylesheet contains "</style"');
  const nav = TABS.map(([id, href, label]) => `<a href="${href}"${id === parts.tab ? ' aria-current="page"' : ''}>${label}</a>`).join('');
  const values: Record<string, string> = { title: parts.title, nav, style: parts.style, main: parts.main, script: parts.script };
  return shell.replace(/\{\{(\w+)\}\}/g, (_m, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`console page.html: unknown placeholder {{${name}}}`);
    return value;
  });
}

/** One page from the asset files: its main section `<tab>.html`, its script `<tab>.js`. */
function buildPage(shell: string, style: string, tab: ConsoleTab, title: string): ConsolePage {
  const script = consoleScript(`${tab}.js`);
  const html = fillShell(shell, { tab, title, main: readConsoleAsset(`${tab}.html`), style, script });
  return { html, csp: consoleCsp(script, style) };
}

let pages: { live: ConsolePage; spend: ConsolePage } | undefined;

/**
 * Both console pages, built from the asset files on the first call (at start, when the
 * console routes are registered) and kept: no file is read per request.
 * @throws Error when an asset file is missing or malformed.
 */
export function consolePages(): { live: ConsolePage; spend: ConsolePage } {
  if (pages) return pages;
  const shell = readConsoleAsset('page.html');
  const style = readConsoleAsset('console.css');
  pages = {
    live: buildPage(shell, style, 'live', 'Switchyard console'),
    spend: buildPage(shell, style, 'spend', 'Switchyard console: spend'),
  };
  return pages;
}
