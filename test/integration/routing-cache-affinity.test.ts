/**
 * Cache affinity (router/affinity.ts), end to end under the default strategy (`balanced`): a
 * session's turns stay on the account that holds its prompt cache; when that account is full a
 * turn waits for it briefly rather than rebuild the cache elsewhere; a turn that could not wait
 * moves, and the session stays where it went. `x-switchyard-cache` says which.
 *
 * The real gateway on port 0 in front of real fake upstreams on loopback (one per target,
 * test/helpers/routing-cluster.ts), driven with fetch.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { answer } from '../helpers/accounts.js';
import { FakeUpstream, type ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, startGateway } from '../helpers/gateway.js';
import { sseEvents } from '../helpers/recordings.js';
import { BASE_ROUTING, chat, clusterYaml, ok, sleep, startCluster, type Cluster, type Result } from '../helpers/routing-cluster.js';

/** A prompt long enough to be cached (over 1,024 tokens). */
const LONG = { messages: [{ role: 'user', content: 'the history of a long agent session '.repeat(200) }] };
/** A recorded OpenAI chat stream (no usage chunk, ends with [DONE]), and its content type. */
const STREAM = 'openai-chat-stream-text-no-usage-2023.sse';
const SSE = { 'content-type': 'text/event-stream; charset=utf-8' };
const cacheOf = (rs: Result[]) => rs.map((r) => r.headers.get('x-switchyard-cache'));

/** A new session whose first turn landed on `upstream` (new sessions alternate between idle accounts). */
async function sessionOn(gw: Cluster['gw'], upstream: string): Promise<string> {
  for (let i = 0; i < 20; i++) {
    const r = await chat(gw, LONG, { 'x-session-id': `neighbour-${i}` });
    if (r.upstream === upstream) return `neighbour-${i}`;
  }
  throw new Error(`no new session landed on ${upstream}`);
}

describe('cache affinity (default strategy)', () => {
  test('a session stays on one account (cold, then warm); session-less calls still spread, with no header', async () => {
    const c = await startCluster([{ id: 'a' }, { id: 'b' }, { id: 'c' }], BASE_ROUTING);
    try {
      const turns: Result[] = [];
      for (let i = 0; i < 10; i++) turns.push(await chat(c.gw, { ...LONG, user: 'agent-session-1' }));
      assert.ok(turns.every((r) => r.status === 200 && r.headers.get('x-switchyard-strategy') === 'balanced'));
      assert.deepEqual(cacheOf(turns), ['cold', ...Array<string>(9).fill('warm')]);
      const home = turns[0]!.upstream!;
      assert.ok(
        turns.every((r) => r.upstream === home),
        `all on ${home}: ${turns.map((r) => r.upstream).join(',')}`,
      );
      const metrics = await (await fetch(`${c.gw.url}/metrics`)).text();
      assert.match(metrics, /switchyard_cache_affinity_total\{model="gpt-test",decision="warm"\} 9\n/);
      assert.match(metrics, /switchyard_cache_affinity_total\{model="gpt-test",decision="cold"\} 1\n/);

      const loose: Result[] = [];
      for (let i = 0; i < 6; i++) loose.push(await chat(c.gw, LONG));
      assert.ok(loose.every((r) => r.status === 200 && r.headers.get('x-switchyard-cache') === null));
      assert.ok(new Set(loose.map((r) => r.upstream)).size >= 2, 'session-less requests spread over targets');
    } finally {
      await c.close();
    }
  });

  test('many sessions spread over the accounts, each staying on its own', async () => {
    const c = await startCluster([{ id: 'a' }, { id: 'b' }, { id: 'c' }], BASE_ROUTING);
    try {
      const homes = new Map<string, Set<string>>();
      for (let round = 0; round < 4; round++) {
        for (let s = 0; s < 6; s++) {
          const r = await chat(c.gw, LONG, { 'x-session-id': `s-${s}` });
          assert.equal(r.status, 200);
          if (!homes.has(`s-${s}`)) homes.set(`s-${s}`, new Set());
          homes.get(`s-${s}`)!.add(r.upstream!);
        }
      }
      assert.ok(
        [...homes.values()].every((h) => h.size === 1),
        'each session on one account',
      );
      assert.ok(new Set([...homes.values()].map((h) => [...h][0])).size >= 2, 'sessions spread over accounts');
    } finally {
      await c.close();
    }
  });

  test('cache_affinity.enabled: false — a session is spread like any call', async () => {
    const c = await startCluster([{ id: 'a' }, { id: 'b' }, { id: 'c' }], `${BASE_ROUTING}\n  cache_affinity: { enabled: false }`);
    try {
      const turns: Result[] = [];
      for (let i = 0; i < 6; i++) turns.push(await chat(c.gw, LONG, { 'x-session-id': 'spread-me' }));
      assert.ok(turns.every((r) => r.status === 200 && r.headers.get('x-switchyard-cache') === null));
      assert.ok(new Set(turns.map((r) => r.upstream)).size >= 2, 'turns spread over targets');
    } finally {
      await c.close();
    }
  });

  test('a full account: the session waits for it (warm) when it may, else moves and stays moved', async () => {
    for (const [maxWait, expect] of [
      [3000, 'wait'],
      [0, 'move'],
    ] as const) {
      const c = await startCluster(
        [
          { id: 'a', maxConcurrency: 1 },
          { id: 'b', maxConcurrency: 1 },
        ],
        `${BASE_ROUTING}\n  cache_affinity: { max_wait_ms: ${maxWait} }`,
      );
      try {
        const first = await chat(c.gw, LONG, { 'x-session-id': 'busy' });
        const home = first.upstream!;
        const other = home === 'a' ? 'b' : 'a';
        // Another session on the same account holds its only place for 600 ms with a slow turn.
        const neighbour = await sessionOn(c.gw, home);
        c.fakes[home]!.on(() => ok(600));
        const holder = chat(c.gw, LONG, { 'x-session-id': neighbour });
        await sleep(150);
        c.fakes[home]!.on(() => ok());
        const began = Date.now();
        const turn = await chat(c.gw, LONG, { 'x-session-id': 'busy' });
        const took = Date.now() - began;
        const held = await holder;
        assert.equal(held.status, 200);
        assert.equal(turn.status, 200);
        assert.equal(held.upstream, home, 'the slow turn went to the session account');
        if (expect === 'wait') {
          assert.equal(turn.upstream, home, 'waited for the account holding its cache');
          assert.equal(turn.headers.get('x-switchyard-cache'), 'warm');
          assert.ok(took >= 250, `it waited for the place (${took} ms)`);
        } else {
          assert.equal(turn.upstream, other, 'moved off the full account');
          assert.equal(turn.headers.get('x-switchyard-cache'), 'moved');
          const next = await chat(c.gw, LONG, { 'x-session-id': 'busy' });
          assert.equal(next.upstream, other, 'the session stays where it moved');
          assert.equal(next.headers.get('x-switchyard-cache'), 'warm');
        }
      } finally {
        await c.close();
      }
    }
  });

  test('streams: the wait for a full account is weighed on how long its calls hold their place (to the last byte), not on their time to first token', async () => {
    const c = await startCluster(
      [
        { id: 'a', maxConcurrency: 1 },
        { id: 'b', maxConcurrency: 1 },
      ],
      `${BASE_ROUTING}\n  cache_affinity: { max_wait_ms: 1000 }`,
    );
    // A streamed turn: its first event at once, its last 1.2 s later.
    const streamed = () =>
      fetch(`${c.gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${CLIENT_KEY}`, 'x-session-id': 'streams' },
        body: JSON.stringify({ model: 'gpt-test', stream: true, ...LONG }),
      }).then(async (r) => ({ status: r.status, upstream: r.headers.get('x-switchyard-upstream'), text: await r.text() }));
    try {
      for (const f of Object.values(c.fakes)) f.on((req) => answer(req, 'slow', 1_200));
      const first = await streamed();
      assert.equal(first.status, 200);
      const home = first.upstream!;
      const other = home === 'a' ? 'b' : 'a';
      c.fakes[other]!.on(() => ok());
      // The session's own next turn holds its account's only place for 1.2 s ...
      const holder = streamed();
      await sleep(150);
      // ... so another turn of it would wait ~1.2 s there, more than max_wait_ms: it moves at once.
      const began = Date.now();
      const turn = await chat(c.gw, LONG, { 'x-session-id': 'streams' });
      const took = Date.now() - began;
      assert.equal((await holder).upstream, home);
      assert.equal(turn.upstream, other);
      assert.equal(turn.headers.get('x-switchyard-cache'), 'moved');
      assert.ok(took < 600, `moved without a wait in vain (${took} ms; a wait on the time to first token would take max_wait_ms)`);
    } finally {
      await c.close();
    }
  });

  test('a pin lasts as long as the cache the request asked for (prompt_cache_retention: 24h), not only cache_affinity.ttl_ms', async () => {
    const c = await startCluster([{ id: 'a' }, { id: 'b' }, { id: 'c' }], `${BASE_ROUTING}\n  cache_affinity: { ttl_ms: 1000 }`);
    try {
      const long = { ...LONG, prompt_cache_retention: '24h' };
      const first = [await chat(c.gw, long, { 'x-session-id': 'kept' }), await chat(c.gw, LONG, { 'x-session-id': 'default' })];
      assert.deepEqual(cacheOf(first), ['cold', 'cold']);
      await sleep(1_300);
      const again = [await chat(c.gw, long, { 'x-session-id': 'kept' }), await chat(c.gw, LONG, { 'x-session-id': 'default' })];
      assert.deepEqual(cacheOf(again), ['warm', 'cold'], 'the 24 h pin outlived ttl_ms; the default one did not');
      assert.equal(again[0]!.upstream, first[0]!.upstream);
    } finally {
      await c.close();
    }
  });

  test('a prompt too short to be cached is never held for its account', async () => {
    const c = await startCluster(
      [
        { id: 'a', maxConcurrency: 1 },
        { id: 'b', maxConcurrency: 1 },
      ],
      `${BASE_ROUTING}\n  cache_affinity: { max_wait_ms: 3000 }`,
    );
    try {
      const first = await chat(c.gw, {}, { 'x-session-id': 'short' });
      const home = first.upstream!;
      c.fakes[home]!.on(() => ok(600));
      const holder = chat(c.gw, {}, { 'x-session-id': 'short' });
      await sleep(150);
      const turn = await chat(c.gw, {}, { 'x-session-id': 'short' });
      const held = await holder;
      assert.equal(held.upstream, home, 'the slow turn went to the session account');
      assert.notEqual(turn.upstream, home, 'a short prompt moves at once');
      assert.equal(turn.headers.get('x-switchyard-cache'), 'moved');
    } finally {
      await c.close();
    }
  });
  test('the wait for a full warm account ends at routing.deadline_ms, not max_wait_ms', async () => {
    const c = await startCluster(
      [
        { id: 'a', maxConcurrency: 1 },
        { id: 'b', maxConcurrency: 1 },
      ],
      `${BASE_ROUTING}\n  deadline_ms: 500\n  cache_affinity: { max_wait_ms: 60000 }`,
    );
    try {
      const home = (await chat(c.gw, LONG, { 'x-session-id': 'deadline' })).upstream!;
      c.fakes[home]!.on(() => ok(3000));
      const holder = chat(c.gw, LONG, { 'x-session-id': 'deadline' });
      await sleep(150);
      c.fakes[home]!.on(() => ok());
      const began = Date.now();
      const turn = await chat(c.gw, LONG, { 'x-session-id': 'deadline' });
      const took = Date.now() - began;
      assert.ok(took < 1500, `the wait stopped at the deadline (${took} ms)`);
      assert.ok([200, 504].includes(turn.status), `served elsewhere or timed out: ${turn.status}`);
      assert.equal((await holder).status, 200);
    } finally {
      await c.close();
    }
  });
  test('one pin per session and model: a session mixing two models on the same accounts (Claude Code and its small model) stays warm on each', async () => {
    const fakes: Record<string, FakeUpstream> = {};
    const targets = [{ id: 'a' }, { id: 'b' }, { id: 'c' }];
    for (const t of targets) fakes[t.id] = (await new FakeUpstream().start()).on(() => ok());
    const small = `  - name: small\n    price: { input: 1, output: 1 }\n    targets: [${targets.map((t) => `{ upstream: ${t.id}, model: s-${t.id} }`).join(', ')}]\nkeys:`;
    const gw = await startGateway(clusterYaml(targets, fakes, BASE_ROUTING).replace('\nkeys:', `\n${small}`));
    try {
      const seen = new Map<string, { upstream: string | null; cache: string | null }[]>();
      for (let turn = 0; turn < 4; turn++) {
        for (let s = 0; s < 4; s++) {
          for (const model of ['gpt-test', 'small']) {
            const r = await chat(gw, { ...LONG, model }, { 'x-claude-code-session-id': `mixed-${s}` });
            assert.equal(r.status, 200);
            const k = `${s}/${model}`;
            seen.set(k, [...(seen.get(k) ?? []), { upstream: r.upstream, cache: r.headers.get('x-switchyard-cache') }]);
          }
        }
      }
      for (const [k, turns] of seen) {
        assert.deepEqual(
          turns.map((t) => t.cache),
          ['cold', 'warm', 'warm', 'warm'],
          `${k}: ${JSON.stringify(turns)}`,
        );
        assert.equal(new Set(turns.map((t) => t.upstream)).size, 1, `${k} on one account`);
      }
    } finally {
      await gw.close();
      for (const f of Object.values(fakes)) await f.close();
    }
  });

  test('a stream that breaks after its first byte does not keep its session on that account: the pin is cleared, the next turn placed afresh', async () => {
    const c = await startCluster([{ id: 'a' }, { id: 'b' }], BASE_ROUTING);
    const good = (): ScriptedReply => ({ status: 200, headers: SSE, steps: sseEvents(STREAM) });
    const broken = (): ScriptedReply => ({ status: 200, headers: SSE, steps: [...sseEvents(STREAM).slice(0, 3), { delayMs: 20 }, { destroy: true }] });
    try {
      for (const id of c.ids) c.fakes[id]!.on(good);
      const stream = async (): Promise<{ upstream: string | null; cache: string | null; text: string }> => {
        const res = await fetch(`${c.gw.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${CLIENT_KEY}`, 'x-session-id': 'breaking' },
          body: JSON.stringify({ model: 'gpt-test', stream: true, ...LONG }),
        });
        const text = await res.text();
        // The turn settles before the next is sent: its upstream body ended and the gateway
        // gave its slot back (a delivered stream's slot, and the pin riding on it, goes back
        // when the upstream ends its body, which may come after the client's end).
        while (c.ids.some((id) => c.fakes[id]!.inFlight > 0)) await sleep(5);
        await sleep(20);
        return { upstream: res.headers.get('x-switchyard-upstream'), cache: res.headers.get('x-switchyard-cache'), text };
      };
      const first = await stream();
      const home = first.upstream!;
      const other = c.ids.find((id) => id !== home)!;
      assert.equal((await stream()).cache, 'warm');
      // The home account now breaks every stream after its first events.
      c.fakes[home]!.on(broken);
      const brokenTurn = await stream();
      assert.equal(brokenTurn.upstream, home);
      assert.match(brokenTurn.text, /upstream_stream_error/);
      // Placed afresh (cold), until a turn lands on the other account; then it stays there.
      const later: { upstream: string | null; cache: string | null }[] = [];
      for (let i = 0; i < 6; i++) {
        const r = await stream();
        later.push({ upstream: r.upstream, cache: r.cache });
      }
      assert.equal(later[0]!.cache, 'cold', JSON.stringify(later));
      const settled = later.findIndex((t) => t.upstream === other);
      assert.ok(settled !== -1, JSON.stringify(later));
      assert.ok(
        later.slice(settled + 1).every((t) => t.upstream === other && t.cache === 'warm'),
        JSON.stringify(later),
      );
    } finally {
      await c.close();
    }
  });
});
