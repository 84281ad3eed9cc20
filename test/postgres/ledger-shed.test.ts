/**
 * Shed requests are on the books: a deep call that finds its only account busy is shed to
 * the non-reasoning fallback, and its ledger row names the served model, the requested one
 * and the shed rung, with the fallback's tokens and cost (equal to the cost header);
 * `/admin/spend`'s shed count agrees.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { hashKey } from '../../src/auth/keys.js';
import type { ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, postChat, type TestGateway } from '../helpers/gateway.js';
import { LedgerSetup } from '../helpers/ledger.js';
import type { TestDatabase } from '../helpers/postgres.js';

const reply = (text: string, usage: { prompt_tokens: number; completion_tokens: number }): ScriptedReply => ({
  status: 200,
  body: {
    id: 'c',
    object: 'chat.completion',
    created: 1,
    model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
    usage,
  },
});

function yaml(upstream: string, db: string, spool: string): string {
  return `
routing: { strategy: cheap, max_attempts: 4, backoff_base_ms: 1, backoff_cap_ms: 1, queue: { max: 0, timeout_ms: 100 } }
ledger: { postgres_url: "${db}", flush_ms: 50, spool_path: "${spool}" }
upstreams:
  - { id: a, provider: openai-compatible, base_url: "${upstream}/v1", api_key: "\${TEST_UPSTREAM_KEY}", max_concurrency: 1, capacity: { start: 1, ceiling: 1 } }
  - { id: b, provider: openai-compatible, base_url: "${upstream}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - name: deep
    reasoning: true
    price: { input: 4, output: 16 }
    shed: { policy: downgrade, fallback: lite }
    fallbacks: [lite]
    targets: [{ upstream: a, model: deep-a }]
  - name: lite
    price: { input: 0.5, output: 2 }
    targets: [{ upstream: b, model: lite-b }]
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)} }
`;
}

describe('ledger: a shed request', () => {
  let setup: LedgerSetup;
  let db: TestDatabase;
  let gw: TestGateway;

  before(async () => {
    setup = await LedgerSetup.create((req) =>
      req.json?.['model'] === 'deep-a'
        ? { ...reply('deep', { prompt_tokens: 20, completion_tokens: 30 }), delayMs: 500 }
        : reply('lite', { prompt_tokens: 9, completion_tokens: 4 }),
    );
    db = setup.db;
    gw = await setup.gateway(yaml(setup.fake.url, db.url(), setup.spool()));
  });
  after(() => setup.close());

  test('its row names the shed, both models and the fallback tokens and cost', async () => {
    const deep = { model: 'deep', reasoning_effort: 'high', messages: [{ role: 'user', content: 'hi' }] };
    const slow = postChat(gw, deep, { headers: { 'x-request-id': 'busy-1' } });
    await sleep(150);
    const shed = await postChat(gw, deep, { headers: { 'x-request-id': 'shed-1' } });
    assert.equal(shed.status, 200);
    assert.equal(shed.headers.get('x-switchyard-shed'), 'deep->lite');
    assert.equal((await slow).status, 200);

    let rows: Record<string, unknown>[] = [];
    for (const end = Date.now() + 5000; rows.length < 2 && Date.now() < end; await sleep(25)) {
      rows = await db.query("SELECT * FROM switchyard_requests WHERE request_id IN ('busy-1', 'shed-1') ORDER BY request_id").catch(() => []);
    }
    const [busy, row] = rows as [Record<string, unknown>, Record<string, unknown>];
    assert.equal(row['request_id'], 'shed-1');
    assert.equal(row['requested_model'], 'deep');
    assert.equal(row['model'], 'lite');
    assert.equal(row['upstream'], 'b');
    assert.equal(row['shed'], 'deep->lite');
    assert.equal(Number(row['input_tokens']), 9);
    assert.equal(Number(row['output_tokens']), 4);
    const cost = (9 * 0.5 + 4 * 2) / 1e6;
    assert.ok(Math.abs(Number(row['cost_usd']) - cost) < 1e-15, String(row['cost_usd']));
    assert.ok(Math.abs(Number(shed.headers.get('x-switchyard-cost-usd')) - cost) < 1e-9);
    assert.equal(busy['shed'], null);
    assert.equal(busy['model'], 'deep');
    assert.ok(Math.abs(Number(busy['cost_usd']) - (20 * 4 + 30 * 16) / 1e6) < 1e-15);
    const [rolled] = await db.query<{ shed: string }>("SELECT sum(shed) AS shed FROM switchyard_spend_hourly WHERE model = 'lite'");
    assert.equal(rolled!.shed, '1');
  });
});
