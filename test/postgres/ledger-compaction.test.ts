/**
 * Every compaction (`POST /v1/responses/compact`) is a ledger row with its tokens and cost,
 * priced from the usage of the upstream's answer (issue 29: compactions left no row and no
 * cost), the same as the request's `request finished` line. Against the machine's
 * PostgreSQL, in its own database, dropped after.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { hashKey } from '../../src/auth/keys.js';
import { LedgerSetup } from '../helpers/ledger.js';
import { CLIENT_KEY, type TestGateway } from '../helpers/gateway.js';

type Row = Record<string, unknown>;

/** OpenAI's example answer of "Compact a response" (OpenAPI spec, fixtures/openai-openapi.yaml), with its usage. */
const USAGE = {
  input_tokens: 139,
  input_tokens_details: { cached_tokens: 39 },
  output_tokens: 438,
  output_tokens_details: { reasoning_tokens: 64 },
  total_tokens: 577,
};
const COMPACTED = {
  id: 'resp_001',
  object: 'response.compaction',
  created_at: 1764967971,
  output: [{ id: 'cmp_001', type: 'compaction', encrypted_content: 'gAAAAABpM0Yj-...=' }],
  usage: USAGE,
};
const PRICE = { input: 1.25, cached_input: 0.125, output: 10 };
const COST = ((139 - 39) * PRICE.input + 39 * PRICE.cached_input + 438 * PRICE.output) / 1e6;

function yaml(upstream: string, dbUrl: string, spool: string): string {
  return `
ledger: { postgres_url: "${dbUrl}", flush_ms: 50, retry_ms: 200, spool_path: "${spool}" }
upstreams:
  - { id: resp, provider: openai-compatible, base_url: "${upstream}/v1", api_key: "\${TEST_UPSTREAM_KEY}", options: { responses: true } }
models:
  - name: codex-test
    price: { input: ${PRICE.input}, cached_input: ${PRICE.cached_input}, output: ${PRICE.output} }
    targets: [{ upstream: resp, model: up-codex }]
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)}, metadata: { team: search } }
`;
}

describe('ledger rows of compactions', () => {
  let setup: LedgerSetup;
  let gw: TestGateway;

  before(async () => {
    setup = await LedgerSetup.create((req) =>
      req.url === '/v1/responses/compact' ? { status: 200, body: COMPACTED } : { status: 404, body: { error: { message: 'no such route' } } },
    );
    gw = await setup.gateway(yaml(setup.fake.url, setup.db.url(), setup.spool()));
  });
  after(() => setup.close());

  /** The ledger rows of `ids`, once all are written. */
  const rowsOf = async (ids: string[]): Promise<Row[]> => {
    const end = Date.now() + 5000;
    for (;;) {
      // The gateway creates the table once it has connected: until then, no rows yet.
      const rows = await setup.db
        .query<Row>('SELECT * FROM switchyard_requests WHERE request_id = ANY($1) ORDER BY ts', [ids])
        .catch((err: { code?: string }) => {
          if (err.code === '42P01') return [];
          throw err;
        });
      if (rows.length >= ids.length || Date.now() > end) return rows;
      await new Promise((r) => setTimeout(r, 25));
    }
  };

  test('each compaction is one row: api responses/compact, tokens from the answer, the cost of the finished line and the header', async () => {
    const client = new OpenAI({ apiKey: CLIENT_KEY, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const ids = ['compact-ledger-1', 'compact-ledger-2'];
    const costs: number[] = [];
    for (const id of ids) {
      const { response } = await client.responses
        .compact({ model: 'codex-test', input: 'a long conversation' }, { headers: { 'x-request-id': id } })
        .withResponse();
      costs.push(Number(response.headers.get('x-switchyard-cost-usd')));
    }
    const rows = await rowsOf(ids);
    assert.equal(rows.length, 2, JSON.stringify(rows));
    for (const [i, row] of rows.entries()) {
      assert.equal(row['request_id'], ids[i]);
      assert.equal(row['api'], 'responses/compact');
      assert.equal(row['key_name'], 'team-a');
      assert.deepEqual(row['tags'], { team: 'search' });
      assert.equal(row['model'], 'codex-test');
      assert.equal(row['upstream'], 'resp');
      assert.equal(row['upstream_model'], 'up-codex');
      assert.equal(row['status'], 200);
      assert.equal(row['outcome'], 'ok');
      assert.deepEqual([row['input_tokens'], row['cached_tokens'], row['output_tokens'], row['reasoning_tokens']].map(Number), [139, 39, 438, 64]);
      assert.equal(row['tokens_estimated'], false);
      assert.ok(Math.abs(Number(row['cost_usd']) - COST) < 1e-12, `cost ${String(row['cost_usd'])} vs ${COST}`);
      assert.ok(Math.abs(costs[i]! - COST) < 1e-8, `header ${costs[i]}`);
      const line = gw.finished().find((l) => l['request_id'] === ids[i])!;
      assert.ok(Math.abs(Number(line['cost_usd']) - Number(row['cost_usd'])) < 1e-12);
    }
  });
});
