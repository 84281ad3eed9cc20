/**
 * Routing strategies end to end: the real gateway on port 0 in front of several real fake
 * upstreams on loopback (one per target), driven with the `openai` client and fetch. Where a
 * call went is read from the `x-switchyard-upstream` response header and cross-checked with
 * each fake's received requests.
 *
 * - `balanced` spreads a concurrent burst evenly, and in proportion to target weights;
 * - `fast` steers away from a target that turned slow and comes back once it is fast again;
 * - `cheap` always prefers the lowest price and fails over in price order;
 * - `sticky` keeps a session (x-session-id, then prompt_cache_key, then user) on one
 *   target, and moves it (for good) when that target goes into cooldown;
 * - `cluster_routing` / `x-switchyard-strategy` override the model's strategy per request.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import OpenAI, { BadRequestError } from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream, type ScriptedReply } from '../helpers/fake-upstream.js';
import { fixtureJson } from '../helpers/recordings.js';
import { CLIENT_KEY, startGateway, type TestGateway } from '../helpers/gateway.js';

const MODEL = 'gpt-test';
const COMPLETION = fixtureJson('openai-chat-gpt5.json');
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface TargetSpec {
  /** Upstream id (also what `x-switchyard-upstream` reports). */
  id: string;
  weight?: number;
  price?: { input: number; output: number };
  maxConcurrency?: number;
}

interface Cluster {
  gw: TestGateway;
  fakes: Record<string, FakeUpstream>;
  ids: string[];
  close(): Promise<void>;
}

/** A 200 JSON completion after `delayMs`. */
const ok = (delayMs = 0): ScriptedReply => ({ status: 200, delayMs, body: COMPLETION });
/** A retryable upstream failure. */
const unavailable = (): ScriptedReply => ({ status: 503, body: { error: { message: 'overloaded', type: 'server_error', code: null } } });

/**
 * A config with one upstream (and one fake) per target, all serving `gpt-test` as
 * `m-<id>`. `routing` is YAML indented two spaces; `modelStrategy` sets the model's own.
 */
function clusterYaml(targets: TargetSpec[], fakes: Record<string, FakeUpstream>, routing: string, modelStrategy?: string): string {
  const upstreams = targets
    .map(
      (t) => `
  - id: ${t.id}
    provider: openai-compatible
    base_url: ${fakes[t.id]!.url}/v1
    api_key: \${TEST_UPSTREAM_KEY}
    max_concurrency: ${t.maxConcurrency ?? 32}
    timeouts: { connect_ms: 2000, first_byte_ms: 5000, idle_ms: 5000 }`,
    )
    .join('');
  const targetLines = targets
    .map((t) => {
      const extra = [t.weight !== undefined ? `weight: ${t.weight}` : '', t.price ? `price: { input: ${t.price.input}, output: ${t.price.output} }` : '']
        .filter(Boolean)
        .join(', ');
      return `\n      - { upstream: ${t.id}, model: m-${t.id}${extra ? `, ${extra}` : ''} }`;
    })
    .join('');
  return `
server:
  log_level: warn
routing:
${routing}
upstreams:${upstreams}
models:
  - name: ${MODEL}
    price: { input: 10, output: 10 }${modelStrategy ? `\n    strategy: ${modelStrategy}` : ''}
    targets:${targetLines}
keys:
  - name: team-a
    key_sha256: ${hashKey(CLIENT_KEY)}
    models: ["*"]
`;
}

/** Starts one fake per target (each answering 200 at once) and a gateway in front of them. */
async function startCluster(targets: TargetSpec[], routing: string, modelStrategy?: string): Promise<Cluster> {
  const fakes: Record<string, FakeUpstream> = {};
  for (const t of targets) fakes[t.id] = (await new FakeUpstream().start()).on(() => ok());
  const gw = await startGateway(clusterYaml(targets, fakes, routing, modelStrategy));
  return {
    gw,
    fakes,
    ids: targets.map((t) => t.id),
    close: async () => {
      await gw.close();
      for (const f of Object.values(fakes)) await f.close();
    },
  };
}

/** Generous retry budget and no backoff, so only the strategy decides where calls go. */
const BASE_ROUTING = `  max_attempts: 3
  backoff_base_ms: 0
  backoff_cap_ms: 0
  retry_budget: { ratio: 1, min_retries: 100 }`;

interface Result {
  status: number;
  headers: Headers;
  json: Record<string, unknown>;
  /** `x-switchyard-upstream`. */
  upstream: string | null;
}

/** POSTs a chat completion with fetch. */
async function chat(gw: TestGateway, extraBody: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<Result> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${CLIENT_KEY}`, ...headers },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hello' }], ...extraBody }),
  });
  const json = (await res.json()) as Record<string, unknown>;
  return { status: res.status, headers: res.headers, json, upstream: res.headers.get('x-switchyard-upstream') };
}

/** A chat completion through the official client; returns the response headers. */
async function sdkChat(client: OpenAI, extraBody: Record<string, unknown> = {}, headers: Record<string, string> = {}): Promise<Headers> {
  const params = { model: MODEL, messages: [{ role: 'user', content: 'hello' }], ...extraBody } as ChatCompletionCreateParamsNonStreaming;
  const { data, response } = await client.chat.completions.create(params, { headers }).withResponse();
  assert.equal(data.id, COMPLETION['id']);
  return response.headers;
}

/** How many of `upstreams` (header values) went to each id. */
function tally(ids: string[], upstreams: (string | null)[]): Record<string, number> {
  const out: Record<string, number> = Object.fromEntries(ids.map((id) => [id, 0]));
  for (const u of upstreams) {
    assert.ok(u !== null && u in out, `unexpected x-switchyard-upstream ${String(u)}`);
    out[u]!++;
  }
  return out;
}

/** Requests each fake received. */
function received(c: Cluster): Record<string, number> {
  return Object.fromEntries(c.ids.map((id) => [id, c.fakes[id]!.requests.length]));
}

function diff(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.keys(after).map((k) => [k, after[k]! - (before[k] ?? 0)]));
}

describe('routing strategies', () => {
  test('balanced (default): a concurrent burst of 24 spreads 8/8/8 (±2) over three equal targets', async () => {
    // No `strategy` anywhere: `balanced` is the default.
    const c = await startCluster([{ id: 'a' }, { id: 'b' }, { id: 'c' }], BASE_ROUTING);
    try {
      // Each upstream holds its reply for 150 ms, so the burst is in flight at once and
      // the spread comes from in-flight load, not from taking turns.
      let inFlight = 0;
      let peak = 0;
      for (const f of Object.values(c.fakes)) {
        f.on(async () => {
          inFlight++;
          peak = Math.max(peak, inFlight);
          await sleep(150);
          inFlight--;
          return ok();
        });
      }
      const client = c.gw.client();
      const headers = await Promise.all(Array.from({ length: 24 }, () => sdkChat(client)));

      assert.ok(headers.every((h) => h.get('x-switchyard-strategy') === 'balanced'), 'the default strategy is balanced');
      assert.ok(headers.every((h) => h.get('x-switchyard-attempts') === '1'));
      const byHeader = tally(c.ids, headers.map((h) => h.get('x-switchyard-upstream')));
      assert.deepEqual(byHeader, received(c), 'the header agrees with what each upstream received');
      for (const id of c.ids) {
        assert.ok(Math.abs(byHeader[id]! - 8) <= 2, `target ${id} took ${byHeader[id]} of 24 (expected 8±2): ${JSON.stringify(byHeader)}`);
      }
      assert.ok(peak >= 12, `the burst overlapped upstream (peak ${peak} in flight)`);
    } finally {
      await c.close();
    }
  });

  test('balanced: weights 2:1:1 give the heavier target about half of a 24-request burst', async () => {
    const c = await startCluster(
      [
        { id: 'heavy', weight: 2, maxConcurrency: 16 },
        { id: 'light1', weight: 1, maxConcurrency: 16 },
        { id: 'light2', weight: 1, maxConcurrency: 16 },
      ],
      `  strategy: balanced\n${BASE_ROUTING}`,
    );
    try {
      for (const f of Object.values(c.fakes)) f.on(() => ok(150));
      const client = c.gw.client();
      const headers = await Promise.all(Array.from({ length: 24 }, () => sdkChat(client)));
      const byHeader = tally(c.ids, headers.map((h) => h.get('x-switchyard-upstream')));
      assert.deepEqual(byHeader, received(c));
      const { heavy, light1, light2 } = byHeader as { heavy: number; light1: number; light2: number };
      // Load is (in-flight + 1) / (weight × max_concurrency): ≈12 / 6 / 6.
      assert.ok(heavy >= 10 && heavy <= 14, `heavy took ${heavy} of 24 (expected about half): ${JSON.stringify(byHeader)}`);
      assert.ok(heavy >= light1 + 3 && heavy >= light2 + 3, `heavy clearly ahead of the light targets: ${JSON.stringify(byHeader)}`);
      assert.ok(light1 >= 4 && light2 >= 4, `the light targets still share the rest: ${JSON.stringify(byHeader)}`);
    } finally {
      await c.close();
    }
  });

  test('fast: avoids a target that turned 10x slower, and wins it back once it is fast again', async () => {
    // A small decay constant so an idle target's estimate fades within about a second.
    const c = await startCluster([{ id: 'a' }, { id: 'b' }, { id: 'c' }], `  strategy: fast\n  latency_decay_ms: 200\n${BASE_ROUTING}`);
    try {
      const delay: Record<string, number> = { a: 20, b: 20, c: 20 };
      for (const id of c.ids) c.fakes[id]!.on(() => ok(delay[id]));

      // Warm-up: never-measured targets cost 0 and are explored first; go on until every
      // target has answered at least twice.
      for (let i = 0; i < 60 && Object.values(received(c)).some((n) => n < 2); i++) {
        const r = await chat(c.gw);
        assert.equal(r.status, 200);
        assert.equal(r.headers.get('x-switchyard-strategy'), 'fast');
      }
      assert.ok(Object.values(received(c)).every((n) => n >= 2), `every target measured during warm-up: ${JSON.stringify(received(c))}`);

      // b turns 10x slower: 200 ms vs 20 ms.
      delay['b'] = 200;
      const beforeSlow = received(c);
      const slowPhase: (string | null)[] = [];
      for (let i = 0; i < 50; i++) {
        const r = await chat(c.gw);
        assert.equal(r.status, 200);
        slowPhase.push(r.upstream);
      }
      const slow = tally(c.ids, slowPhase);
      assert.ok(slow['b']! <= 5, `at least 90% of 50 requests avoid the slow target: ${JSON.stringify(slow)}`);

      // b is fast again. It comes back because LatencyBoard.estimate() (src/router/latency.ts)
      // decays an idle target's estimate as ewma·exp(-idle / (3·latency_decay_ms)): with no
      // traffic b's 200 ms estimate falls below the others' ~20 ms after ~600·ln(10) ≈ 1.4 s,
      // power-of-two-choices then picks it whenever it is drawn, and its first fast answer
      // (blended with weight exp(-Δt/τ) ≈ 0 after that idle time) resets the estimate to ~20 ms.
      delay['b'] = 20;
      const recovered: (string | null)[] = [];
      const deadline = Date.now() + 6000;
      while (recovered.filter((u) => u === 'b').length < 3 && Date.now() < deadline) {
        const r = await chat(c.gw);
        assert.equal(r.status, 200);
        recovered.push(r.upstream);
        await sleep(40);
      }
      const back = tally(c.ids, recovered);
      assert.ok(back['b']! >= 3, `the recovered target wins traffic back (${JSON.stringify(back)} over ${recovered.length} requests)`);
      // The headers agree with what the upstreams received in these two phases.
      assert.deepEqual(diff(received(c), beforeSlow), tally(c.ids, [...slowPhase, ...recovered]));
    } finally {
      await c.close();
    }
  });

  test('cheap: every request goes to the cheapest target; on its failure, to the next cheapest', async () => {
    const c = await startCluster(
      [
        { id: 'pricey', price: { input: 3, output: 3 } },
        { id: 'cheapest', price: { input: 0.5, output: 1 } },
        { id: 'middle', price: { input: 1, output: 2 } },
      ],
      // Enough failures allowed that the cheapest target never cools during this test.
      `  strategy: cheap\n  cooldown: { failures: 50 }\n${BASE_ROUTING}`,
    );
    try {
      const client = c.gw.client();
      const seq: Headers[] = [];
      for (let i = 0; i < 6; i++) seq.push(await sdkChat(client));
      // Price beats load: a concurrent burst (under the concurrency cap) stays on the cheapest too.
      for (const f of Object.values(c.fakes)) f.on(() => ok(50));
      const burst = await Promise.all(Array.from({ length: 8 }, () => sdkChat(client)));
      for (const h of [...seq, ...burst]) {
        assert.equal(h.get('x-switchyard-strategy'), 'cheap');
        assert.equal(h.get('x-switchyard-upstream'), 'cheapest');
        assert.equal(h.get('x-switchyard-attempts'), '1');
      }
      assert.deepEqual(received(c), { pricey: 0, cheapest: 14, middle: 0 });

      // The cheapest fails: the request still succeeds, on the second cheapest.
      c.fakes['cheapest']!.on(() => unavailable());
      for (let i = 0; i < 3; i++) {
        const h = await sdkChat(client);
        assert.equal(h.get('x-switchyard-attempts'), '2');
        assert.equal(h.get('x-switchyard-upstream'), 'middle');
      }
      assert.deepEqual(received(c), { pricey: 0, cheapest: 17, middle: 3 });

      // Both cheaper ones fail: the third attempt goes to the most expensive.
      c.fakes['middle']!.on(() => unavailable());
      const h = await sdkChat(client);
      assert.equal(h.get('x-switchyard-attempts'), '3');
      assert.equal(h.get('x-switchyard-upstream'), 'pricey');
      assert.deepEqual(received(c), { pricey: 1, cheapest: 18, middle: 4 });
    } finally {
      await c.close();
    }
  });

  test('sticky: 20 requests of one x-session-id land on one target (new, then pinned)', async () => {
    const c = await startCluster([{ id: 'a' }, { id: 'b' }, { id: 'c' }], `  strategy: sticky\n${BASE_ROUTING}`);
    try {
      const results: Result[] = [];
      for (let i = 0; i < 20; i++) results.push(await chat(c.gw, {}, { 'x-session-id': 'session-one' }));
      assert.ok(results.every((r) => r.status === 200));
      assert.ok(results.every((r) => r.headers.get('x-switchyard-strategy') === 'sticky'));
      assert.deepEqual(
        results.map((r) => r.headers.get('x-switchyard-sticky')),
        ['new', ...Array<string>(19).fill('pinned')],
      );
      const home = results[0]!.upstream!;
      assert.ok(results.every((r) => r.upstream === home), `all on ${home}: ${results.map((r) => r.upstream).join(',')}`);
      assert.equal(c.fakes[home]!.requests.length, 20);

      // Without a session there is nothing to pin: no sticky header, and turns are taken.
      const loose: Result[] = [];
      for (let i = 0; i < 6; i++) loose.push(await chat(c.gw));
      assert.ok(loose.every((r) => r.status === 200 && r.headers.get('x-switchyard-sticky') === null));
      assert.ok(new Set(loose.map((r) => r.upstream)).size >= 2, 'session-less requests spread over targets');
    } finally {
      await c.close();
    }
  });

  test('sticky: prompt_cache_key, then user, key the session when there is no x-session-id', async () => {
    const c = await startCluster([{ id: 'a' }, { id: 'b' }, { id: 'c' }], `  strategy: sticky\n${BASE_ROUTING}`);
    try {
      const run = async (n: number, body: Record<string, unknown>, headers: Record<string, string> = {}) => {
        const out: Result[] = [];
        for (let i = 0; i < n; i++) out.push(await chat(c.gw, body, headers));
        assert.ok(out.every((r) => r.status === 200));
        return out;
      };
      const stickyOf = (rs: Result[]) => rs.map((r) => r.headers.get('x-switchyard-sticky'));

      const byCacheKey = await run(8, { prompt_cache_key: 'pck-1' });
      assert.deepEqual(stickyOf(byCacheKey), ['new', ...Array<string>(7).fill('pinned')]);
      assert.equal(new Set(byCacheKey.map((r) => r.upstream)).size, 1, 'prompt_cache_key keeps one target');

      const byUser = await run(8, { user: 'user-1' });
      assert.deepEqual(stickyOf(byUser), ['new', ...Array<string>(7).fill('pinned')]);
      assert.equal(new Set(byUser.map((r) => r.upstream)).size, 1, 'user keeps one target');

      const byHeader = await run(3, {}, { 'x-session-id': 'hdr-1' });
      assert.deepEqual(stickyOf(byHeader), ['new', 'pinned', 'pinned']);

      // Precedence: x-session-id over prompt_cache_key over user. A known session plus a
      // never-seen lower-precedence key stays `pinned` (a lower key would have been `new`).
      const hdrWins = await run(1, { prompt_cache_key: 'pck-never-seen', user: 'user-never-seen' }, { 'x-session-id': 'hdr-1' });
      assert.deepEqual(stickyOf(hdrWins), ['pinned']);
      assert.equal(hdrWins[0]!.upstream, byHeader[0]!.upstream);
      const pckWins = await run(1, { prompt_cache_key: 'pck-1', user: 'user-never-seen-2' });
      assert.deepEqual(stickyOf(pckWins), ['pinned']);
      assert.equal(pckWins[0]!.upstream, byCacheKey[0]!.upstream);
      // And a new header session is new even with a known prompt_cache_key in the body.
      const newHdr = await run(1, { prompt_cache_key: 'pck-1' }, { 'x-session-id': 'hdr-fresh' });
      assert.deepEqual(stickyOf(newHdr), ['new']);
    } finally {
      await c.close();
    }
  });

  test('sticky: different sessions can land on different targets, each staying on its own', async () => {
    const c = await startCluster([{ id: 'a' }, { id: 'b' }, { id: 'c' }], `  strategy: sticky\n${BASE_ROUTING}`);
    try {
      const sessions = ['s1', 's2', 's3', 's4', 's5', 's6'];
      const home: Record<string, string> = {};
      for (let round = 0; round < 4; round++) {
        for (const s of sessions) {
          const r = await chat(c.gw, {}, { 'x-session-id': s });
          assert.equal(r.status, 200);
          assert.equal(r.headers.get('x-switchyard-sticky'), round === 0 ? 'new' : 'pinned');
          if (round === 0) home[s] = r.upstream!;
          else assert.equal(r.upstream, home[s], `session ${s} stays on ${home[s]}`);
        }
      }
      const used = new Set(Object.values(home));
      assert.ok(used.size >= 2, `new sessions spread over targets: ${JSON.stringify(home)}`);
      // Every target's traffic is exactly its sessions' 4 requests each.
      for (const id of c.ids) {
        const pinnedHere = sessions.filter((s) => home[s] === id).length;
        assert.equal(c.fakes[id]!.requests.length, pinnedHere * 4, `target ${id}`);
      }
    } finally {
      await c.close();
    }
  });

  test('sticky: when the pinned target cools down the session moves, and stays moved after it recovers', async () => {
    const c = await startCluster(
      [{ id: 'a' }, { id: 'b' }, { id: 'c' }],
      `  strategy: sticky\n  cooldown: { failures: 1, base_ms: 300, max_ms: 300 }\n${BASE_ROUTING}`,
    );
    try {
      const session = { 'x-session-id': 'moving-session' };
      const first = await chat(c.gw, {}, session);
      assert.equal(first.headers.get('x-switchyard-sticky'), 'new');
      const old = first.upstream!;
      for (let i = 0; i < 3; i++) {
        const r = await chat(c.gw, {}, session);
        assert.equal(r.headers.get('x-switchyard-sticky'), 'pinned');
        assert.equal(r.upstream, old);
      }

      // The pinned target starts failing: one 503 cools it, the request fails over.
      c.fakes[old]!.on(() => unavailable());
      const beforeOld = c.fakes[old]!.requests.length;
      const moved = await chat(c.gw, {}, session);
      assert.equal(moved.status, 200);
      assert.equal(moved.headers.get('x-switchyard-sticky'), 'moved');
      assert.equal(moved.headers.get('x-switchyard-attempts'), '2');
      const now = moved.upstream!;
      assert.notEqual(now, old);
      assert.equal(c.fakes[old]!.requests.length, beforeOld + 1, 'the pinned target was tried first');

      for (let i = 0; i < 3; i++) {
        const r = await chat(c.gw, {}, session);
        assert.equal(r.headers.get('x-switchyard-sticky'), 'pinned');
        assert.equal(r.headers.get('x-switchyard-attempts'), '1');
        assert.equal(r.upstream, now);
      }
      assert.equal(c.fakes[old]!.requests.length, beforeOld + 1, 'the cooling target got nothing more');

      // The old target recovers; once its cooldown is over it serves again (session-less
      // requests take turns over all three targets) ...
      c.fakes[old]!.on(() => ok());
      await sleep(400);
      const loose: Result[] = [];
      for (let i = 0; i < 3; i++) loose.push(await chat(c.gw));
      assert.ok(loose.every((r) => r.status === 200));
      assert.ok(loose.some((r) => r.upstream === old), `the recovered target serves again: ${loose.map((r) => r.upstream).join(',')}`);

      // ... but the session stays where it moved to.
      const oldBefore = c.fakes[old]!.requests.length;
      for (let i = 0; i < 10; i++) {
        const r = await chat(c.gw, {}, session);
        assert.equal(r.status, 200);
        assert.equal(r.headers.get('x-switchyard-sticky'), 'pinned');
        assert.equal(r.upstream, now);
      }
      assert.equal(c.fakes[old]!.requests.length, oldBefore);
    } finally {
      await c.close();
    }
  });

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
      const spread = tally(c.ids, plain.map((h) => h.get('x-switchyard-upstream')));
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
    } finally {
      await c.close();
    }
  });
});
