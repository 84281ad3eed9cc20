/**
 * The ledger (src/ledger): every finished request is one row in PostgreSQL with its exact
 * tokens and cost — JSON, stream, failed, refused, aborted and fallback requests — tagged
 * from the key's metadata and `x-switchyard-tags`. Against the machine's PostgreSQL, each
 * describe in its own database, dropped after.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { LedgerSetup } from '../helpers/ledger.js';
import { CLIENT_KEY, postChat, type TestGateway } from '../helpers/gateway.js';
import type { TestDatabase } from '../helpers/postgres.js';

type Row = Record<string, unknown> & { request_id: string };

describe('ledger rows: one per request, exact tokens and cost', () => {
  let setup: LedgerSetup;
  let db: TestDatabase;
  let gw: TestGateway;

  before(async () => {
    setup = await LedgerSetup.create();
    db = setup.db;
    gw = await setup.ledgerGateway();
  });
  after(() => setup.close());

  const rowOf = async (id: string): Promise<Row> => {
    let row: Row | undefined;
    const end = Date.now() + 5000;
    while (!row && Date.now() < end) {
      // The gateway creates the table once it has connected: until then, no row yet.
      row = (
        await db.query<Row>('SELECT * FROM switchyard_requests WHERE request_id = $1', [id]).catch((err: { code?: string }) => {
          if (err.code === '42P01') return [];
          throw err;
        })
      )[0];
      if (!row) await new Promise((r) => setTimeout(r, 25));
    }
    assert.ok(row, `no ledger row for ${id}`);
    return row;
  };
  const send = (id: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    postChat(gw, { model: 'gpt-test', ...body }, { headers: { 'x-request-id': id, ...headers } });

  test('a JSON answer: tokens by kind, the cost header, tags from metadata and header', async () => {
    const r = await send('ledger-json-1', { messages: [{ role: 'user', content: 'hi' }] }, { 'x-switchyard-tags': 'repo=api, dev=ana,team=spoofed' });
    assert.equal(r.status, 200);
    const row = await rowOf('ledger-json-1');
    assert.equal(row['key_name'], 'team-a');
    assert.equal(row['model'], 'gpt-test');
    assert.equal(row['requested_model'], 'gpt-test');
    assert.equal(row['upstream'], 'fake');
    assert.equal(row['upstream_model'], 'up-x');
    assert.equal(row['api'], 'chat');
    assert.equal(row['status'], 200);
    assert.equal(row['outcome'], 'ok');
    assert.equal(row['stream'], false);
    assert.deepEqual([row['input_tokens'], row['cached_tokens'], row['output_tokens'], row['reasoning_tokens']].map(Number), [11, 4, 5, 2]);
    assert.equal(row['tokens_estimated'], false);
    assert.ok(Math.abs(Number(row['cost_usd']) - Number(r.headers.get('x-switchyard-cost-usd'))) < 1e-8);
    assert.ok(Number(row['cost_usd']) > 0);
    // The key's metadata wins over what the client sends.
    assert.deepEqual(row['tags'], { team: 'search', repo: 'api', dev: 'ana' });
    assert.ok(Number(row['duration_ms']) >= 0);
  });

  test('a stream: usage from the final chunk, TTFT set, cost as the log line', async () => {
    const r = await send('ledger-stream-1', { stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] });
    assert.match(r.text, /\[DONE\]/);
    const row = await rowOf('ledger-stream-1');
    assert.equal(row['stream'], true);
    assert.deepEqual([Number(row['input_tokens']), Number(row['output_tokens'])], [13, 3]);
    assert.ok(row['ttft_ms'] !== null);
    const line = gw.finished().find((l) => l['request_id'] === 'ledger-stream-1')!;
    assert.ok(Math.abs(Number(row['cost_usd']) - Number(line['cost_usd'])) < 1e-12);
    assert.ok(Math.abs(Number(row['cost_usd']) - (13 * 2.5 + 3 * 10) / 1e6) < 1e-12);
  });

  test('a failed primary served by the fallback: both models and the fallback mark', async () => {
    const r = await send('ledger-fallback-1', { messages: [{ role: 'user', content: 'fail' }] });
    assert.equal(r.status, 200);
    const row = await rowOf('ledger-fallback-1');
    assert.equal(row['requested_model'], 'gpt-test');
    assert.equal(row['model'], 'gpt-cheap');
    assert.equal(row['fallback'], 'gpt-test->gpt-cheap');
    assert.equal(Number(row['attempts']), 2);
    assert.ok(Math.abs(Number(row['cost_usd']) - (7 * 0.5 + 2 * 1.5) / 1e6) < 1e-12);
  });

  test('refused and aborted requests are on the books too', async () => {
    assert.equal((await send('ledger-bad-1', { messages: [{ role: 'user', content: 'bad' }] })).status, 400);
    const bad = await rowOf('ledger-bad-1');
    assert.equal(bad['outcome'], 'client_error');
    assert.equal(Number(bad['status']), 400);
    assert.equal(Number(bad['cost_usd']), 0);

    const ac = new AbortController();
    const p = fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json', 'x-request-id': 'ledger-abort-1' },
      body: JSON.stringify({ model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'slow' }] }),
      signal: ac.signal,
    });
    const res = await p;
    const reader = res.body!.getReader();
    await reader.read();
    ac.abort();
    const aborted = await rowOf('ledger-abort-1');
    assert.equal(aborted['outcome'], 'client_aborted');
    assert.equal(Number(aborted['status']), 499);
    // An aborted stream is billed by estimate: the upstream never sent its usage.
    assert.equal(aborted['tokens_estimated'], true);
    assert.ok(Number(aborted['input_tokens']) > 0);
  });

  test('a request refused before any key was recognised is logged, not booked: anonymous traffic cannot fill the ledger', async () => {
    const anon = await postChat(
      gw,
      { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] },
      { key: 'sk-nobody', headers: { 'x-request-id': 'ledger-anon-1' } },
    );
    assert.equal(anon.status, 401);
    // A keyed request sent after it is booked; by then the anonymous one would have been too.
    assert.equal((await send('ledger-after-anon-1', { messages: [{ role: 'user', content: 'hi' }] })).status, 200);
    await rowOf('ledger-after-anon-1');
    await new Promise((r) => setTimeout(r, 300));
    const rows = await db.query<Row>('SELECT request_id FROM switchyard_requests WHERE request_id = $1', ['ledger-anon-1']);
    assert.deepEqual(rows, []);
    assert.ok(
      gw.finished().some((l) => l['request_id'] === 'ledger-anon-1' && l['status'] === 401),
      'the refusal is in the log',
    );
  });

  test('a stream its client leaves right after [DONE] is an ok row with the reported tokens (issue 29)', async () => {
    const ac = new AbortController();
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json', 'x-request-id': 'ledger-gone-1' },
      body: JSON.stringify({ model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'linger' }] }),
      signal: ac.signal,
    });
    const reader = res.body!.getReader();
    let text = '';
    while (!text.includes('data: [DONE]\n\n')) text += Buffer.from((await reader.read()).value!).toString('utf8');
    ac.abort();
    const row = await rowOf('ledger-gone-1');
    assert.deepEqual([row['outcome'], Number(row['status']), row['tokens_estimated']], ['ok', 200, false]);
    assert.deepEqual([Number(row['input_tokens']), Number(row['output_tokens'])], [13, 3]);
  });

  test('an unknown model is on the books with the id the client sent', async () => {
    assert.equal((await send('ledger-unknown-1', { model: 'gpt-unknown-id', messages: [{ role: 'user', content: 'hi' }] })).status, 404);
    const row = await rowOf('ledger-unknown-1');
    assert.deepEqual([row['requested_model'], row['model'], row['outcome']], ['gpt-unknown-id', null, 'client_error']);
  });

  test('a malformed x-switchyard-tags header is a 400 that says what to send, and on the books', async () => {
    for (const [header, says] of [
      ['team', /name=value/],
      ['Team=x', /Invalid tag name/],
      ['repo=a,repo=b', /given twice/],
      [Array.from({ length: 17 }, (_, i) => `t${i}=v`).join(','), /Too many tags/],
    ] as const) {
      const id = `ledger-tags-${Math.random().toString(36).slice(2)}`;
      const r = await send(id, { messages: [{ role: 'user', content: 'hi' }] }, { 'x-switchyard-tags': header });
      assert.equal(r.status, 400, header);
      const err = (JSON.parse(r.text) as { error: { message: string; param: string; type: string } }).error;
      assert.match(err.message, says);
      assert.equal(err.param, 'x-switchyard-tags');
      assert.equal(err.type, 'invalid_request_error');
      assert.equal((await rowOf(id))['outcome'], 'client_error');
    }
  });

  test('token counts a provider reports as a fraction or past 2^53 do not cost the batch its rows', async () => {
    const [odd, plain] = await Promise.all([
      send('ledger-odd-usage', { messages: [{ role: 'user', content: 'odd-usage' }] }),
      send('ledger-odd-neighbour', { messages: [{ role: 'user', content: 'hi' }] }),
    ]);
    assert.equal(odd.status, 200);
    assert.equal(plain.status, 200);
    assert.equal(Number((await rowOf('ledger-odd-neighbour'))['input_tokens']), 11, 'the other request in the batch is on the books');
    const row = await rowOf('ledger-odd-usage');
    // 1e20 is no count: the usage is not believed, the call is counted by the tokenizer and marked estimated.
    assert.equal(row['tokens_estimated'], true);
    assert.ok(
      Number(row['input_tokens']) > 0 && Number.isSafeInteger(Number(row['output_tokens'])),
      JSON.stringify([row['input_tokens'], row['output_tokens']]),
    );
    assert.equal(Number(row['cost_usd']), Number(odd.headers.get('x-switchyard-cost-usd')));
    assert.ok(Number(row['cost_usd']) < 0.01, String(row['cost_usd']));
  });

  test('the schema is migrated once and partitioned by day', async () => {
    const versions = await db.query<{ version: number }>('SELECT version FROM switchyard_ledger_migrations');
    assert.deepEqual(
      versions.map((v) => v.version),
      [1, 2, 3],
    );
    const parts = await db.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'switchyard_requests'`,
    );
    const today = new Date().toISOString().slice(0, 10).replaceAll('-', '');
    assert.ok(
      parts.some((p) => p.name === `switchyard_requests_${today}`),
      JSON.stringify(parts),
    );
    const ready = (await (await fetch(`${gw.url}/readyz`)).json()) as { ledger: { state: string; backlog_rows: number } };
    assert.equal(ready.ledger.state, 'up');
  });
});
