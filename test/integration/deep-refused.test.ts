/**
 * Deep calls whose accounts refuse them, with a shed fallback that answers: the route takes the
 * ladder's rung below instead of ending on the accounts' refusal. Found by a hostile pass
 * (2026-12-07): with every account answering 429 + `Retry-After: 1` to every deep call, a third
 * of a cold burst got the provider's 429 relayed and the rest 503 `retry_budget_exhausted`,
 * though the cheap model was healthy; a call shed to the fallback could still be stopped by the
 * spent retry budget before it reached it; and a warm call refused by every account waited the
 * named second for a place, past the wait rung's bound.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream, type ReceivedRequest, type ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, startGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { fixtureJson } from '../helpers/recordings.js';
import { chatChunk, deepChat } from '../helpers/deep-calls.js';

/** How long an account takes to answer one deep call, ms. */
const CALL_MS = 800;

/** An account: answers in `ms` while it has fewer than `places` calls open, else 429 with `Retry-After: 1` (the recorded OpenAI body). */
class Account {
  readonly fake: FakeUpstream;
  places = 2;
  constructor(
    readonly id: string,
    private readonly ms = CALL_MS,
  ) {
    this.fake = new FakeUpstream().on((req) => this.answer(req));
  }
  private answer(req: ReceivedRequest): ScriptedReply {
    const open = this.fake.requests.filter((r) => !r.finished && r.abortedAt === null).length;
    if (open > this.places) {
      req.finished = true;
      return { status: 429, headers: { 'retry-after': '1' }, body: fixtureJson('openai-error-429-rate-limit-exceeded.json') };
    }
    return {
      status: 200,
      steps: [
        chatChunk({ role: 'assistant', content: '' }),
        { delayMs: this.ms },
        chatChunk({ content: `from ${this.id}` }),
        chatChunk({}, 'stop'),
        'data: [DONE]\n\n',
      ],
    };
  }
}

/** A key of `priority: background` (it skips the wait rung). */
const BG_KEY = 'sk-test-background-0123456789';

/** `house` on accounts a and b with the shed fallback `cheap` on c; with `deep2`, house is on a alone and falls back to the reasoning model `deep2` on b. */
const yaml = (a: string, b: string, c: string, deep2 = false): string => `
server: { log_level: info }
upstreams:
  - { id: acct-a, provider: openai-compatible, base_url: "${a}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
  - { id: acct-b, provider: openai-compatible, base_url: "${b}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
  - { id: acct-c, provider: openai-compatible, base_url: "${c}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - name: house
    reasoning: true
    price: { input: 1, output: 2 }
    shed: { fallback: cheap }${deep2 ? '\n    fallbacks: [deep2]' : ''}
    targets: [{ upstream: acct-a, model: house-up }${deep2 ? '' : ', { upstream: acct-b, model: house-up }'}]${
      deep2
        ? `
  - name: deep2
    reasoning: true
    price: { input: 1, output: 2 }
    shed: { fallback: cheap }
    targets: [{ upstream: acct-b, model: deep2-up }]`
        : ''
    }
  - name: cheap
    price: { input: 0.1, output: 0.2 }
    targets: [{ upstream: acct-c, model: cheap-up }]
keys:
  - { name: agents, key_sha256: ${hashKey(CLIENT_KEY)} }
  - { name: batch, key_sha256: ${hashKey(BG_KEY)}, priority: background }
`;

/** `n` deep streaming chat calls at once (no SDK retries): each one's status, text and time, ms. */
async function burst(gw: TestGateway, n: number, key = CLIENT_KEY): Promise<{ status: number; text: string; ms: number }[]> {
  const openai = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const one = async (i: number): Promise<{ status: number; text: string; ms: number }> => {
    const t0 = Date.now();
    try {
      const text = await deepChat(openai, 'house', `call ${i}`);
      return { status: 200, text, ms: Date.now() - t0 };
    } catch (err) {
      return { status: err instanceof OpenAI.APIError ? (err.status ?? -1) : -1, text: String(err), ms: Date.now() - t0 };
    }
  };
  return Promise.all(Array.from({ length: n }, (_, i) => one(i)));
}

/** `burst`, and the `request finished` line of each of its calls (in the order they finished). */
async function burstLines(gw: TestGateway, n: number): Promise<{ out: Awaited<ReturnType<typeof burst>>; lines: Record<string, unknown>[] }> {
  const start = gw.finished().length;
  const out = await burst(gw, n);
  const lines = await waitFor(() => (gw.finished().length - start >= n ? gw.finished().slice(start) : undefined), 3_000, `${n} lines`);
  return { out, lines };
}

describe('deep calls whose every account refuses them, with a shed fallback', () => {
  const [a, b, cheap] = [new Account('acct-a'), new Account('acct-b'), new Account('acct-c', 20)];
  cheap.places = Number.POSITIVE_INFINITY;
  let gw: TestGateway;
  before(async () => {
    for (const x of [a, b, cheap]) await x.fake.start();
  });
  after(async () => {
    for (const x of [a, b, cheap]) await x.fake.close();
  });

  test('every account refuses every call (429, Retry-After: 1), from cold: each call is served by the fallback, none gets a 429 or a 503', async () => {
    [a.places, b.places] = [0, 0];
    gw = await startGateway(yaml(a.fake.url, b.fake.url, cheap.fake.url));
    try {
      const { out, lines } = await burstLines(gw, 12);
      const summary = JSON.stringify(out.map((o) => `${o.status}:${o.text.slice(0, 60)}`));
      assert.deepEqual(
        out.map((o) => o.status),
        Array(12).fill(200),
        `every call was served: ${summary}`,
      );
      for (const o of out) assert.equal(o.text, 'from acct-c', summary);
      for (const l of lines) assert.equal(l['shed'], 'house->cheap', JSON.stringify(l));
      assert.ok(a.fake.requests.length + b.fake.requests.length >= 12, 'the accounts were asked first');
    } finally {
      await gw.close();
    }
  });

  test('warm, then every account refuses every call: a refused call waits no longer than the wait rung allows (3/4 of a typical call), then goes below', async () => {
    [a.places, b.places] = [2, 2];
    gw = await startGateway(yaml(a.fake.url, b.fake.url, cheap.fake.url));
    try {
      // Learn the accounts and the typical deep call (CALL_MS).
      for (const n of [8, 4, 4]) assert.ok((await burst(gw, n)).every((o) => o.status === 200));
      [a.places, b.places] = [0, 0];
      const { out, lines } = await burstLines(gw, 8);
      const summary = JSON.stringify(
        lines.map((l) => `${String(l['status'])}:${String(l['upstream'])}:${String(l['duration_ms'])}ms:${String(l['shed'] ?? '-')}`),
      );
      assert.ok(
        out.every((o) => o.status === 200 && o.text === 'from acct-c'),
        `every call was served by the fallback: ${summary}`,
      );
      // Not the named second (Retry-After: 1) and more: within the rung's bound, the call goes below.
      for (const l of lines) assert.ok(Number(l['duration_ms']) < 0.75 * CALL_MS + 250, `no call waited past the rung's bound: ${summary}`);
    } finally {
      await gw.close();
    }
  });

  test('a chain of reasoning fallbacks, every one refusing: the call goes below to the shed fallback, and the marks name the model that served', async () => {
    [a.places, b.places] = [0, 0];
    gw = await startGateway(yaml(a.fake.url, b.fake.url, cheap.fake.url, true));
    try {
      const { out, lines } = await burstLines(gw, 6);
      const summary = JSON.stringify(
        lines.map((l) => `${String(l['status'])}:${String(l['model'])}:${String(l['shed'] ?? '-')}:${String(l['fallback'] ?? '-')}`),
      );
      assert.ok(
        out.every((o) => o.status === 200 && o.text === 'from acct-c'),
        `every call was served by the shed fallback: ${summary}`,
      );
      for (const l of lines) {
        assert.match(String(l['shed']), /->cheap$/, summary);
        assert.ok(l['fallback'] === undefined || /->cheap$/.test(String(l['fallback'])), `no mark names a model that did not serve: ${summary}`);
      }
    } finally {
      await gw.close();
    }
  });

  test('a background key (it skips the wait rung), every account refusing: its calls go below at once, not after the named second', async () => {
    [a.places, b.places] = [0, 0];
    gw = await startGateway(yaml(a.fake.url, b.fake.url, cheap.fake.url));
    try {
      const out = await burst(gw, 8, BG_KEY);
      const summary = JSON.stringify(out.map((o) => `${o.status}:${o.ms}ms:${o.text}`));
      assert.ok(
        out.every((o) => o.status === 200 && o.text === 'from acct-c'),
        `every call was served by the fallback: ${summary}`,
      );
      for (const o of out) assert.ok(o.ms < 800, `no background call waited out the accounts' Retry-After (1 s): ${summary}`);
    } finally {
      await gw.close();
    }
  });
});
