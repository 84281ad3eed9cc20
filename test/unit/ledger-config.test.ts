/**
 * The ledger's config checks and request tags: a PostgreSQL URL that is not one is a config
 * error naming where it came from (never its value); a password written into the file is a
 * warning; `x-switchyard-tags` is parsed, bounded and validated, the key's metadata winning.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { hashKey } from '../../src/auth/keys.js';
import { ConfigError } from '../../src/config/load.js';
import { GatewayError } from '../../src/errors/codes.js';
import { MAX_TAGS, requestTags } from '../../src/record/tags.js';
import { parseTestConfig } from '../helpers/config.js';

const tagHeader = (v: string | string[] | undefined) => ({ 'x-switchyard-tags': v });

const yaml = (ledger: string) => `
${ledger}
upstreams:
  - { id: sim, provider: simulator }
models:
  - { name: m, price: { input: 1, output: 1 }, targets: [{ upstream: sim, model: deepseek-chat }] }
keys:
  - { name: k, key_sha256: ${hashKey('sk-ledger-config-test')} }
`;

describe('ledger config', () => {
  test('no URL anywhere: no ledger, defaults filled in', () => {
    const c = parseTestConfig(yaml(''), {});
    assert.equal(c.ledger.postgres_url, undefined);
    assert.equal(c.ledger.batch_rows, 500);
    assert.equal(c.ledger.retention_days, 90);
    // The durability bound (docs/ledger.md#durability): ≤ 1 s by default, batches sent well within it.
    assert.equal(c.ledger.durable_ms, 1000);
    assert.equal(c.ledger.flush_ms, 250);
  });

  test('a URL that is not PostgreSQL is an error that names its source, not its value', () => {
    for (const [cfg, env, where] of [
      ['ledger: { postgres_url: "mysql://u:hunter2@db/x" }', {}, '/ledger/postgres_url'],
      ['', { DATABASE_URL: 'not a url hunter2' }, 'DATABASE_URL (environment)'],
    ] as const) {
      assert.throws(
        () => parseTestConfig(yaml(cfg), env),
        (err: unknown) => err instanceof ConfigError && err.message.includes(where) && !err.message.includes('hunter2') && /postgres:\/\//.test(err.message),
      );
    }
    assert.equal(parseTestConfig(yaml(''), { DATABASE_URL: 'postgresql://u@db:5432/x' }).ledger.postgres_url, undefined);
  });

  test('a password written into ledger.postgres_url is a warning; a ${VAR} reference is not', () => {
    const literal = parseTestConfig(yaml('ledger: { postgres_url: "postgres://u:hunter2@db/x" }'), {});
    assert.ok(literal.warnings.some((w) => w.includes('/ledger/postgres_url') && !w.includes('hunter2')));
    const ref = parseTestConfig(yaml('ledger: { postgres_url: "${DATABASE_URL}" }'), { DATABASE_URL: 'postgres://u:hunter2@db/x' });
    assert.ok(!ref.warnings.some((w) => w.includes('/ledger/postgres_url')));
  });
});

describe('request tags', () => {
  test('pairs are trimmed, the key metadata wins, absent and empty headers give none', () => {
    assert.deepEqual(requestTags(tagHeader(' repo=api , dev=ana.b '), { team: 'search' }), { repo: 'api', dev: 'ana.b', team: 'search' });
    assert.deepEqual(requestTags(tagHeader('team=spoofed'), { team: 'search' }), { team: 'search' });
    assert.deepEqual(requestTags(tagHeader(undefined), undefined), {});
    assert.deepEqual(requestTags(tagHeader('  '), {}), {});
    assert.deepEqual(requestTags(tagHeader(['a=1', 'b=2']), {}), { a: '1', b: '2' });
  });

  test("names an object's prototype has (constructor, tostring-like) are ordinary tag names, given once", () => {
    assert.deepEqual(requestTags(tagHeader('constructor=y,valueOf=z'.toLowerCase()), {}), { constructor: 'y', valueof: 'z' });
    assert.deepEqual(requestTags(tagHeader('hasownproperty=1'), {}, {}), { hasownproperty: '1' });
  });

  test('malformed headers are 400s naming the header', () => {
    const bad = ['novalue', '=x', 'Upper=x', 'a=', `a=${'x'.repeat(129)}`, 'a=1,a=2', 'a=b=c', `${'n'.repeat(33)}=v`, 'a=\u00e9'];
    for (const h of bad) {
      assert.throws(
        () => requestTags(tagHeader(h), {}),
        (err: unknown) => err instanceof GatewayError && err.status === 400 && err.param === 'x-switchyard-tags',
        h,
      );
    }
    const many = Array.from({ length: MAX_TAGS }, (_, i) => `t${i}=v`).join(',');
    assert.equal(Object.keys(requestTags(tagHeader(many), {})).length, MAX_TAGS);
    assert.throws(() => requestTags(tagHeader(many), { team: 'x' }), /Too many tags/);
  });

  test('configured tag headers: first present wins, lowest precedence, cleaned, never a 400', () => {
    const from = { session: ['x-claude-code-session-id', 'session-id'], agent: 'x-agent' };
    const h = { 'session-id': 'codex-123', 'x-claude-code-session-id': 'cc-9f2e', 'x-agent': 'bot,\u00e9=v\u0001' };
    assert.deepEqual(requestTags(h, {}, from), { session: 'cc-9f2e', agent: 'botv' });
    assert.deepEqual(requestTags({ 'session-id': 'codex-123' }, {}, from), { session: 'codex-123' });
    assert.deepEqual(requestTags({ 'session-id': 'codex-123', 'x-switchyard-tags': 'session=mine' }, {}, from), { session: 'mine' });
    assert.deepEqual(requestTags({ 'session-id': 'codex-123' }, { session: 'op' }, from), { session: 'op' });
    assert.deepEqual(requestTags({ 'x-agent': '\u00e9\u00e9' }, {}, from), {}, 'nothing printable left: no tag');
    assert.equal(requestTags({ 'session-id': 'x'.repeat(500) }, {}, from)['session']!.length, 128);
  });
});
