/**
 * Per-request strategy overrides, end to end: `cluster_routing` in the body and the
 * `x-switchyard-strategy` header beat the model's strategy; an unknown one is a 400.
 *
 * The real gateway on port 0 in front of several real fake upstreams on loopback (one per
 * target, test/helpers/routing-cluster.ts), driven with the `openai` client and fetch.
 * Where a call went is read from the `x-switchyard-upstream` response header and
 * cross-checked with each fake's received requests.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BadRequestError } from 'openai';
import { BASE_ROUTING, chat, diff, received, sdkChat, startCluster, tally } from '../helpers/routing-cluster.js';

describe('routing strategies', () => {
  test('per-request override: cluster_routing in the body and x-switchyard-strategy beat the model strategy', async () => {
    // routing.strategy is `fast`, the model's own `balanced`: the model's wins unless overridden.
    const c = await startCluster(
      [
        { id: 'pricey', price: { input: 5, output: 5 } },
        { id: 'cheapest', price: { input: 1, output: 1 } },
        { id: 'middle', price: { input: 3, output: 3 } },
      ],
      `  strategy: fast\n${BASE_ROUTING}`,
      'balanced',
    );
    try {
      const client = c.gw.client();
      const plain: Headers[] = [];
      for (let i = 0; i < 6; i++) plain.push(await sdkChat(client));
      assert.ok(plain.every((h) => h.get('x-switchyard-strategy') === 'balanced'));
      const spread = tally(
        c.ids,
        plain.map((h) => h.get('x-switchyard-upstream')),
      );
      assert.deepEqual(spread, { pricey: 2, cheapest: 2, middle: 2 }, 'balanced takes turns');

      // Body field, through the official client (an extra body param).
      let before = received(c);
      const viaBody: Headers[] = [];
      for (let i = 0; i < 5; i++) viaBody.push(await sdkChat(client, { cluster_routing: 'cheap' }));
      for (const h of viaBody) {
        assert.equal(h.get('x-switchyard-strategy'), 'cheap');
        assert.equal(h.get('x-switchyard-upstream'), 'cheapest');
      }
      assert.deepEqual(diff(received(c), before), { pricey: 0, cheapest: 5, middle: 0 });
      for (const r of c.fakes['cheapest']!.requests.slice(-5)) {
        assert.ok(r.json, 'upstream got JSON');
        assert.ok(!('cluster_routing' in r.json), 'cluster_routing is not forwarded');
        assert.ok(!r.body.includes('cluster_routing'), 'cluster_routing is not in the raw upstream body');
        assert.equal(r.json['model'], 'm-cheapest');
      }

      // Header.
      before = received(c);
      const viaHeader: Headers[] = [];
      for (let i = 0; i < 5; i++) viaHeader.push(await sdkChat(client, {}, { 'x-switchyard-strategy': 'cheap' }));
      for (const h of viaHeader) {
        assert.equal(h.get('x-switchyard-strategy'), 'cheap');
        assert.equal(h.get('x-switchyard-upstream'), 'cheapest');
      }
      assert.deepEqual(diff(received(c), before), { pricey: 0, cheapest: 5, middle: 0 });

      // Without an override it is balanced again.
      const again = await chat(c.gw);
      assert.equal(again.headers.get('x-switchyard-strategy'), 'balanced');
    } finally {
      await c.close();
    }
  });

  test('per-request override: an unknown strategy in the body or header is a 400 and reaches no upstream', async () => {
    const c = await startCluster(
      [
        { id: 'a', price: { input: 5, output: 5 } },
        { id: 'b', price: { input: 1, output: 1 } },
      ],
      BASE_ROUTING,
      'balanced',
    );
    try {
      type ErrorBody = { error: { message: string; type: string; param: string | null; code: string | null } };
      const cases: { name: string; body: Record<string, unknown>; headers: Record<string, string>; param: string }[] = [
        { name: 'body', body: { cluster_routing: 'cheapest' }, headers: {}, param: 'cluster_routing' },
        { name: 'body (wrong case)', body: { cluster_routing: 'CHEAP' }, headers: {}, param: 'cluster_routing' },
        { name: 'body (not a string)', body: { cluster_routing: 1 }, headers: {}, param: 'cluster_routing' },
        { name: 'header', body: {}, headers: { 'x-switchyard-strategy': 'fastest' }, param: 'x-switchyard-strategy' },
        { name: 'header (round-robin)', body: {}, headers: { 'x-switchyard-strategy': 'round-robin' }, param: 'x-switchyard-strategy' },
      ];
      for (const k of cases) {
        const r = await chat(c.gw, k.body, k.headers);
        assert.equal(r.status, 400, `${k.name}: status`);
        const err = (r.json as ErrorBody).error;
        assert.ok(err, `${k.name}: an OpenAI error body`);
        assert.equal(err.type, 'invalid_request_error', `${k.name}: type`);
        assert.equal(err.param, k.param, `${k.name}: param`);
        assert.ok(err.message.length > 0);
        assert.equal(r.upstream, null, `${k.name}: no upstream header`);
      }

      // The official client raises BadRequestError with the param.
      const client = c.gw.client();
      for (const [extra, headers, param] of [
        [{ cluster_routing: 'nope' }, {}, 'cluster_routing'],
        [{}, { 'x-switchyard-strategy': 'nope' }, 'x-switchyard-strategy'],
      ] as const) {
        await assert.rejects(sdkChat(client, extra, headers), (err: unknown) => {
          assert.ok(err instanceof BadRequestError, `BadRequestError expected, got ${String(err)}`);
          assert.equal(err.status, 400);
          assert.equal(err.type, 'invalid_request_error');
          assert.equal(err.param, param);
          return true;
        });
      }
      assert.deepEqual(received(c), { a: 0, b: 0 }, 'no upstream received anything');

      // Sanity: the same gateway does serve valid requests.
      const good = await chat(c.gw, {}, { 'x-switchyard-strategy': 'cheap' });
      assert.equal(good.status, 200);
      assert.equal(good.upstream, 'b');
      // An empty header is no header: the model's strategy, not a 400.
      const blank = await chat(c.gw, {}, { 'x-switchyard-strategy': ' ' });
      assert.equal(blank.status, 200);
      assert.equal(blank.headers.get('x-switchyard-strategy'), 'balanced');
    } finally {
      await c.close();
    }
  });
});
