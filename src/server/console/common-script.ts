/**
 * What the console pages' scripts share, inlined into each one's IIFE (so each page still
 * has one script, allowed by its hash): the admin-key session (sessionStorage for the tab,
 * the login form, sign-out), the status line, number formats and the table helpers. Every
 * value is written with `textContent`, never as HTML.
 *
 * Names it defines for the page script: `$`, `dash`, `int`, `usd`, `ms`, `pct`, `clock`,
 * `cell`, `row`, `emptyRow`, `fill`, `setStatus`, `showLogin`, `showMain`, `adminGet`,
 * `session`.
 */

/** sessionStorage key of the admin key: one sign-in serves every console page of the tab. */
export const CONSOLE_STORAGE_KEY = 'switchyard.console.adminKey';

/** The shared part, as inlined (plain ES2020, no template literals, no regular expressions). */
export const CONSOLE_COMMON = `
  const STORAGE = '${CONSOLE_STORAGE_KEY}';
  const $ = (id) => document.getElementById(id);

  const dash = '\\u2013';
  const int = (n) => (typeof n === 'number' ? n.toLocaleString('en-US') : dash);
  const usd = (n) => (typeof n === 'number' ? '$' + n.toFixed(n !== 0 && Math.abs(n) < 1 ? 6 : 2) : dash);
  const ms = (n) => (typeof n !== 'number' ? dash : n < 1000 ? Math.round(n) + ' ms' : (n / 1000).toFixed(2) + ' s');
  const pct = (n) => (typeof n === 'number' ? (n * 100).toFixed(1) + '%' : dash);
  const clock = (t) => new Date(t).toLocaleTimeString('en-GB', { hour12: false });

  function cell(text, cls, col) {
    const td = document.createElement('td');
    td.textContent = text === null || text === undefined || text === '' ? dash : String(text);
    if (cls) td.className = cls;
    if (col) td.dataset.col = col;
    return td;
  }
  function row(cells, attrs) {
    const tr = document.createElement('tr');
    for (const c of cells) tr.appendChild(c);
    if (attrs) for (const k of Object.keys(attrs)) tr.dataset[k] = attrs[k];
    return tr;
  }
  function emptyRow(cols, text) {
    const td = cell(text, 'empty');
    td.colSpan = cols;
    return row([td]);
  }
  function fill(id, rows, cols, emptyText) {
    const body = $(id).tBodies[0];
    body.replaceChildren(...(rows.length > 0 ? rows : [emptyRow(cols, emptyText)]));
  }

  function setStatus(text, stale) {
    const s = $('status');
    s.textContent = text;
    s.className = stale ? 'stale' : '';
  }

  function showLogin(message) {
    $('main').hidden = true;
    $('signout').hidden = true;
    $('login').hidden = false;
    $('login-error').textContent = message || '';
    setStatus('', false);
    $('key').focus();
  }

  function showMain() {
    $('login').hidden = true;
    $('main').hidden = false;
    $('signout').hidden = false;
  }

  /**
   * GETs an admin path with the kept admin key. Resolves to the Response, or to null when
   * there is no key or it was refused (401/403): then the key is forgotten, stop() is
   * called and the login form shown with the reason. Rejects on a network error.
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

  /** Wires the login form and the sign-out button; calls start() now when a key is kept. */
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
`;
