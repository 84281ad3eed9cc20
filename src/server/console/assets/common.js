/*
 * What the console pages' scripts share, inlined where a page script says
 * `// @include common.js` (page.ts), inside its IIFE: each page still has one script,
 * allowed by its hash. The admin-key session (sessionStorage for the tab, the login form,
 * sign-out), the status line, number formats and the table helpers. Every value is
 * written with textContent, never as HTML.
 */
/* exported $, dash, int, usd, ms, pct, clock, cell, row, emptyRow, fill, setStatus, showLogin, showMain, adminGet, session */

/** sessionStorage key of the admin key: one sign-in serves every console page of the tab. */
const STORAGE = 'switchyard.console.adminKey';

/**
 * The page's element with this id. Typed `any`: the ids are the page's own static HTML,
 * elements of many types.
 * @param {string} id
 * @returns {any}
 */
const $ = (id) => document.getElementById(id);

/** Shown for a missing value. */
const dash = '\u2013';
/** @type {(n: unknown) => string} A count, grouped by thousands. */
const int = (n) => (typeof n === 'number' ? n.toLocaleString('en-US') : dash);
/** @type {(n: unknown) => string} US dollars: 6 decimals under $1, else 2. */
const usd = (n) => (typeof n === 'number' ? '$' + n.toFixed(n !== 0 && Math.abs(n) < 1 ? 6 : 2) : dash);
/** @type {(n: unknown) => string} Milliseconds, as seconds from 1000 up. */
const ms = (n) => (typeof n !== 'number' ? dash : n < 1000 ? Math.round(n) + ' ms' : (n / 1000).toFixed(2) + ' s');
/** @type {(n: unknown) => string} A ratio as a percentage. */
const pct = (n) => (typeof n === 'number' ? (n * 100).toFixed(1) + '%' : dash);
/** @type {(t: string | number) => string} A time of day, 24-hour, in the browser's zone. */
const clock = (t) => new Date(t).toLocaleTimeString('en-GB', { hour12: false });

/**
 * A table cell showing `text` (a dash when empty).
 * @param {unknown} text
 * @param {string | null} [cls] its class
 * @param {string} [col] its data-col
 * @returns {HTMLTableCellElement}
 */
function cell(text, cls, col) {
  const td = document.createElement('td');
  td.textContent = text === null || text === undefined || text === '' ? dash : String(text);
  if (cls) td.className = cls;
  if (col) td.dataset.col = col;
  return td;
}
/**
 * A table row of `cells`, with `attrs` as its data- attributes.
 * @param {Node[]} cells
 * @param {Record<string, string>} [attrs]
 * @returns {HTMLTableRowElement}
 */
function row(cells, attrs) {
  const tr = document.createElement('tr');
  for (const c of cells) tr.appendChild(c);
  if (attrs) for (const k of Object.keys(attrs)) tr.dataset[k] = attrs[k];
  return tr;
}
/**
 * A row of one muted cell spanning `cols` columns.
 * @param {number} cols
 * @param {string} text
 * @returns {HTMLTableRowElement}
 */
function emptyRow(cols, text) {
  const td = cell(text, 'empty');
  td.colSpan = cols;
  return row([td]);
}
/**
 * Replaces the body of table `id` with `rows`, or with one empty row saying `emptyText`.
 * @param {string} id
 * @param {HTMLTableRowElement[]} rows
 * @param {number} cols
 * @param {string} emptyText
 */
function fill(id, rows, cols, emptyText) {
  const body = $(id).tBodies[0];
  body.replaceChildren(...(rows.length > 0 ? rows : [emptyRow(cols, emptyText)]));
}

/**
 * Writes the status line; `stale` marks it as an error.
 * @param {string} text
 * @param {boolean} stale
 */
function setStatus(text, stale) {
  const s = $('status');
  s.textContent = text;
  s.className = stale ? 'stale' : '';
}

/**
 * Hides the page and shows the login form with `message`.
 * @param {string} message
 */
function showLogin(message) {
  $('main').hidden = true;
  $('signout').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = message || '';
  setStatus('', false);
  $('key').focus();
}

/** Hides the login form and shows the page. */
function showMain() {
  $('login').hidden = true;
  $('main').hidden = false;
  $('signout').hidden = false;
}

/**
 * GETs an admin path with the kept admin key. Resolves to the Response, or to null when
 * there is no key or it was refused (401/403): then the key is forgotten, stop() is
 * called and the login form shown with the reason. Rejects on a network error.
 * @param {string} path
 * @param {() => void} stop
 * @returns {Promise<Response | null>}
 */
async function adminGet(path, stop) {
  const key = sessionStorage.getItem(STORAGE);
  if (!key) {
    stop();
    showLogin('');
    return null;
  }
  const res = await fetch(path, { headers: { authorization: 'Bearer ' + key }, cache: 'no-store', credentials: 'omit' });
  if (res.status === 401 || res.status === 403) {
    sessionStorage.removeItem(STORAGE);
    stop();
    showLogin(res.status === 403 ? 'That is a client key: the console needs the admin key.' : 'The admin key was not accepted.');
    return null;
  }
  return res;
}

/**
 * Wires the login form and the sign-out button; calls start() now when a key is kept.
 * @param {() => void} start
 * @param {() => void} stop
 */
function session(start, stop) {
  $('login').addEventListener('submit', (e) => {
    e.preventDefault();
    const input = $('key');
    const key = input.value.trim();
    input.value = '';
    if (!key) return;
    sessionStorage.setItem(STORAGE, key);
    $('login-error').textContent = '';
    start();
  });
  $('signout').addEventListener('click', () => {
    sessionStorage.removeItem(STORAGE);
    stop();
    showLogin('Signed out.');
  });
  if (sessionStorage.getItem(STORAGE)) start();
  else showLogin('');
}
