/**
 * The console pages are their files in src/server/console/assets/ (read once at start,
 * src/server/console/page.ts): each page served is page.html with the files' text inlined
 * verbatim, its CSP allows exactly the inline script and stylesheet as served (hashes of
 * the served text), every asset file is used by a page and ships with the package (hence
 * in the Docker image, deploy-files-dockerfile.test.ts), and the scripts read the routes
 * the admin app has. The browser behaviour itself is console.test.ts's.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { hashKey } from '../../src/auth/keys.js';
import { buildAdmin } from '../../src/server/admin/api.js';
import { consoleAssetsDir } from '../../src/server/console/assets.js';
import { CONSOLE_SPEND_PATH } from '../../src/server/console/page.js';
import { CONSOLE_DATA_PATH } from '../../src/server/console/routes.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { ROOT } from '../helpers/deploy-files.js';
import { startGateway, testConfigYaml, type TestGateway } from '../helpers/gateway.js';

const ADMIN_KEY = 'sk-admin-console-assets-0123456789abcdef';
const ASSETS = join(ROOT, 'src', 'server', 'console', 'assets');
const asset = (name: string): string => readFileSync(join(ASSETS, name), 'utf8');
/** A page script with its `// @include <file>` lines replaced by the files, as the page inlines it. */
const inlined = (name: string): string => asset(name).replace(/^[ \t]*\/\/ @include (\S+)\n/gm, (_l, f: string) => asset(f));
const sha256 = (s: string): string => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`;
/** The text of the one `<tag>` element of `html`. */
function element(html: string, tag: string): string {
  const parts = html.split(`<${tag}>`);
  assert.equal(parts.length, 2, `one <${tag}> element`);
  return parts[1]!.split(`</${tag}>`)[0]!;
}

const PAGES = [
  { path: '/console', tab: 'live', title: 'Switchyard console' },
  { path: CONSOLE_SPEND_PATH, tab: 'spend', title: 'Switchyard console: spend' },
] as const;

describe('console pages from their asset files', () => {
  const upstream = new FakeUpstream();
  let gw: TestGateway;
  let admin: FastifyInstance;
  const served = new Map<string, { html: string; csp: string }>();

  before(async () => {
    await upstream.start();
    gw = await startGateway(`${testConfigYaml(upstream.url)}\nadmin:\n  key_sha256: ${hashKey(ADMIN_KEY)}\n`);
    admin = await buildAdmin(gw);
    for (const p of PAGES) {
      const res = await admin.inject({ method: 'GET', url: p.path });
      assert.equal(res.statusCode, 200, p.path);
      served.set(p.tab, { html: res.body, csp: String(res.headers['content-security-policy']) });
    }
  });
  after(async () => {
    await admin?.close();
    await gw?.close();
    await upstream.close();
  });

  test('the assets are read from <package root>/src/server/console/assets, which ships with the package', () => {
    assert.equal(consoleAssetsDir(), ASSETS);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { files: string[] };
    assert.ok(pkg.files.includes('src/server/console/assets'), 'package.json "files" lists the assets (the Dockerfile copies what it lists)');
  });

  for (const p of PAGES) {
    test(`${p.path} is page.html with console.css, ${p.tab}.html and ${p.tab}.js inlined verbatim`, () => {
      const { html } = served.get(p.tab)!;
      const script = element(html, 'script');
      assert.equal(script, inlined(`${p.tab}.js`));
      assert.doesNotMatch(script, /^[ \t]*\/\/ @include /m, 'no include line left');
      assert.equal(element(html, 'style'), asset('console.css'));
      const nav = PAGES.map((q) => `<a href="${q.path}"${q.tab === p.tab ? ' aria-current="page"' : ''}>${q.tab === 'live' ? 'Live' : 'Spend'}</a>`).join('');
      const fill: Record<string, string> = { title: p.title, nav, style: asset('console.css'), main: asset(`${p.tab}.html`), script };
      assert.equal(
        html,
        asset('page.html').replace(/\{\{(\w+)\}\}/g, (_m, k: string) => fill[k]!),
      );
    });

    test(`${p.path}: the CSP allows exactly the served inline script and stylesheet`, () => {
      const { html, csp } = served.get(p.tab)!;
      const directive = (name: string): string => csp.split('; ').find((d) => d.startsWith(`${name} `))!;
      assert.equal(directive('script-src'), `script-src ${sha256(element(html, 'script'))}`);
      assert.equal(directive('style-src'), `style-src ${sha256(element(html, 'style'))}`);
      assert.match(csp, /^default-src 'none'; /);
    });
  }

  test('every asset file is used by a page', () => {
    const pages = [...served.values()].map((s) => s.html).join('\n');
    const files = readdirSync(ASSETS).filter((f) => f !== 'tsconfig.json' && f !== 'page.html');
    assert.deepEqual(files.sort(), ['common.js', 'console.css', 'live.html', 'live.js', 'spend-chart.js', 'spend.html', 'spend.js']);
    for (const f of files) assert.ok(pages.includes(f.endsWith('.js') ? inlined(f) : asset(f)), `${f} is inlined into a page`);
    assert.ok(readdirSync(ASSETS).includes('page.html'));
  });

  test('the scripts read the admin routes there are', () => {
    assert.ok(asset('live.js').includes(`const DATA = '${CONSOLE_DATA_PATH}';`), 'live.js polls CONSOLE_DATA_PATH');
    assert.ok(admin.hasRoute({ method: 'GET', url: CONSOLE_DATA_PATH }));
    const api = /const API = '([^']+)';/.exec(asset('spend.js'))?.[1];
    assert.ok(api && admin.hasRoute({ method: 'GET', url: api }), `spend.js reads ${api}, a route of the admin app`);
  });
});
