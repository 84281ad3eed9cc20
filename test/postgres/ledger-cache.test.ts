/**
 * Prompt-cache books end to end: a fake Anthropic upstream answers with the usage shape of the
 * recordings (`anthropic-messages-text.json`, `anthropic-messages-stream-thinking.sse`) carrying
 * cache reads and 5-minute and 1-hour writes (`cache_creation`). The ledger row (PostgreSQL),
 * `/admin/spend`'s sums, the metrics and the log line all carry them, and the cost prices each
 * kind at its own price (USD per 1M tokens).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hashKey } from '../../src/auth/keys.js';
import { buildAdmin } from '../../src/server/admin/api.js';
import type { Script } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, finishedLine, postChat, type TestGateway } from '../helpers/gateway.js';
import { LedgerSetup } from '../helpers/ledger.js';
import { metricValue } from '../helpers/metrics-text.js';
import { fixtureJson } from '../helpers/recordings.js';

const ADMIN_KEY = 'sk-admin-cache-0123456789abcdef0123';

/** USD per 1M tokens, set apart so each kind's share of the cost shows. */
const PRICE = { input: 3, cached_input: 0.3, cache_write: 3.75, cache_write_1h: 6, output: 15 };
const USAGE = { input_tokens: 12, cache_read_input_tokens: 4000, cache_creation_input_tokens: 3000, output_tokens: 29 };
const CREATION = { ephemeral_5m_input_tokens: 1000, ephemeral_1h_input_tokens: 2000 };
const COST = (12 * PRICE.input + 4000 * PRICE.cached_input + 1000 * PRICE.cache_write + 2000 * PRICE.cache_write_1h + 29 * PRICE.output) / 1e6;

const sse = (event: string, data: Record<string, unknown>) => `event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`;

/** The recorded JSON answer with cache traffic in its usage; a stream like the recorded one (message_delta repeats no split). */
const anthropic: Script = (req) => {
  const text = fixtureJson('anthropic-messages-text.json');
  const usage = { ...(text['usage'] as Record<string, unknown>), ...USAGE, cache_creation: CREATION };
  if (req.json?.['stream'] !== true) return { status: 200, body: { ...text, usage } };
  const message = { ...text, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } };
  return {
    status: 200,
    headers: { 'content-type': 'text/event-stream' },
    steps: [
      sse('message_start', { message }),
      sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
      sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hello!' } }),
      sse('content_block_stop', { index: 0 }),
      sse('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { ...USAGE } }),
      sse('message_stop', {}),
    ],
  };
};

function yaml(upstream: string, dbUrl: string, spool: string): string {
  const p = PRICE;
  return `
admin: { key_sha256: ${hashKey(ADMIN_KEY)} }
ledger: { postgres_url: "${dbUrl}", flush_ms: 50, retry_ms: 200, spool_path: "${spool}" }
upstreams:
  - id: claude
    provider: anthropic
    base_url: ${upstream}/v1
    api_key: \${TEST_UPSTREAM_KEY}
    options: { anthropic_version: "2023-06-01", default_max_tokens: 1000 }
models:
  - name: claude-test
    price: { input: ${p.input}, cached_input: ${p.cached_input}, cache_write: ${p.cache_write}, cache_write_1h: ${p.cache_write_1h}, output: ${p.output} }
    targets: [{ upstream: claude, model: claude-sonnet-4-5-20250929 }]
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)} }
`;
}

describe('ledger: prompt-cache reads and 5-minute / 1-hour writes', () => {
  let setup: LedgerSetup;
  let gw: TestGateway;

  before(async () => {
    setup = await LedgerSetup.create(anthropic);
    gw = await setup.gateway(yaml(setup.fake.url, setup.db.url(), setup.spool()));
  });
  after(() => setup.close());

  const rowOf = async (id: string): Promise<Record<string, unknown>> => {
    const end = Date.now() + 5000;
    for (;;) {
      const rows = await setup.db.query('SELECT * FROM switchyard_requests WHERE request_id = $1', [id]).catch(() => []);
      if (rows[0]) return rows[0];
      assert.ok(Date.now() < end, `no ledger row for ${id}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };

  for (const stream of [false, true]) {
    test(`${stream ? 'a stream' : 'a JSON answer'}: the row, the log line and the cost carry reads and both writes`, async () => {
      const id = `cache-${stream ? 'stream' : 'json'}`;
      const body = {
        model: 'claude-test',
        messages: [{ role: 'user', content: 'hi' }],
        ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
      };
      const r = await postChat(gw, body, { headers: { 'x-request-id': id } });
      assert.equal(r.status, 200, r.text);
      const row = await rowOf(id);
      assert.deepEqual(
        ['input_tokens', 'cached_tokens', 'cache_write_tokens', 'cache_write_1h_tokens', 'output_tokens'].map((c) => Number(row[c])),
        [7012, 4000, 3000, 2000, 29],
      );
      assert.ok(Math.abs(Number(row['cost_usd']) - COST) < 1e-12, `${String(row['cost_usd'])} vs ${COST}`);
      const line = await finishedLine(gw, id);
      assert.deepEqual(line['tokens'], { input: 7012, cached: 4000, output: 29, reasoning: 0, cache_write: 3000, cache_write_1h: 2000 });
      assert.equal(line['cost_usd'], Number(row['cost_usd']));
    });
  }

  test('metrics: tokens by kind add up to the prompt; the cache-read share is reads over prompts', async () => {
    const text = await gw.metricsText();
    const kind = (k: string) => metricValue(text, 'switchyard_tokens_total', { model: 'claude-test', upstream: 'claude', kind: k });
    assert.deepEqual(['input', 'cached_input', 'cache_write', 'cache_write_1h', 'output'].map(kind), [24, 8000, 2000, 4000, 58]);
    assert.equal(metricValue(text, 'switchyard_cache_read_share', { model: 'claude-test', upstream: 'claude' }), 4000 / 7012);
    assert.equal(metricValue(text, 'switchyard_key_tokens_total', { key: 'team-a', kind: 'cache_write_1h' }), 4000);
  });

  test('/admin/spend sums the cache columns', async () => {
    const adm = await buildAdmin(gw);
    try {
      const url = await adm.listen({ host: '127.0.0.1', port: 0 });
      const res = await fetch(`${url}/admin/spend?granularity=none&group_by=model`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
      assert.equal(res.status, 200);
      const rows = ((await res.json()) as { data: Record<string, unknown>[] }).data;
      assert.deepEqual(
        rows.map((r) => [r['model'], r['cached_tokens'], r['cache_write_tokens'], r['cache_write_1h_tokens']]),
        [['claude-test', 8000, 6000, 4000]],
      );
    } finally {
      await adm.close();
    }
  });
});
