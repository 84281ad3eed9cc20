/**
 * An upstream's own wait, relayed with its error: capped at `routing.retry_after_cap_ms`.
 * An upstream 429 saying `Retry-After: 3600` would make Codex, Claude Code and the OpenAI
 * SDK sleep an hour; past the cap the client gets the capped wait and `x-should-retry:
 * false` instead (the answer is final, so no SDK loops on it). A value that names no wait
 * (negative, words, an HTTP-date already past) is not relayed: a rate limit then says the
 * gateway's 1 s. A wait within the cap passes through unchanged.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, closeAll, postChat, startWithUpstream, testConfigYaml, type TestGateway } from '../helpers/gateway.js';
import { fixture } from '../helpers/recordings.js';

/** The cap this gateway runs with, ms. */
const CAP_MS = 2_500;

interface Reply {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/** The gateway's answer to one chat or messages request while the upstream answers 429 with `headers`. */
async function relayed(gw: TestGateway, upstream: FakeUpstream, headers: Record<string, string>, api: 'chat' | 'messages' = 'chat'): Promise<Reply> {
  upstream.on(() => ({ status: 429, headers, body: fixture('openai-error-429-rate-limit-exceeded.json') }));
  const before = upstream.requests.length;
  let reply: Reply;
  if (api === 'chat') {
    const raw = await postChat(gw, { model: 'gpt-test', messages: [{ role: 'user', content: 'hello' }] });
    reply = { status: raw.status, headers: raw.headers, body: JSON.parse(raw.text) as Record<string, unknown> };
  } else {
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': CLIENT_KEY, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: 'gpt-test', max_tokens: 10, messages: [{ role: 'user', content: 'hello' }] }),
    });
    reply = { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
  }
  assert.equal(upstream.requests.length, before + 1, 'the upstream answered this request itself');
  assert.equal(reply.status, 429, JSON.stringify(reply.body));
  return reply;
}

function waitOf(r: Reply): { 'retry-after': string | null; 'retry-after-ms': string | null; 'x-should-retry': string | null } {
  return { 'retry-after': r.headers.get('retry-after'), 'retry-after-ms': r.headers.get('retry-after-ms'), 'x-should-retry': r.headers.get('x-should-retry') };
}

describe('an upstream wait relayed with its 429', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;

  before(async () => {
    // One attempt, and a target cooled by a 429 for at most the cap is still tried (it is the only one).
    ({ upstream, gw } = await startWithUpstream((url) => testConfigYaml(url, { routing: `  max_attempts: 1\n  retry_after_cap_ms: ${CAP_MS}` })));
  });
  after(() => closeAll(gw, upstream));

  test('within the cap: the upstream wait passed on, one wait in both headers alike (at least 1 s), a retry expected', async () => {
    assert.deepEqual(waitOf(await relayed(gw, upstream, { 'retry-after': '2' })), { 'retry-after': '2', 'retry-after-ms': '2000', 'x-should-retry': 'true' });
    // retry-after-ms is the finer of the two; Retry-After says the same wait, rounded up.
    assert.deepEqual(waitOf(await relayed(gw, upstream, { 'retry-after-ms': '1500', 'retry-after': '1' })), {
      'retry-after': '2',
      'retry-after-ms': '1500',
      'x-should-retry': 'true',
    });
    assert.deepEqual(waitOf(await relayed(gw, upstream, { 'retry-after-ms': '1500', 'retry-after': 'soon' })), {
      'retry-after': '2',
      'retry-after-ms': '1500',
      'x-should-retry': 'true',
    });
    assert.deepEqual(
      waitOf(await relayed(gw, upstream, { 'retry-after': '0' })),
      { 'retry-after': '1', 'retry-after-ms': '1000', 'x-should-retry': 'true' },
      'never below 1 s',
    );
  });

  test('Retry-After: 3600 is capped (whole seconds, rounded up) and the answer is final', async () => {
    const capped = { 'retry-after': '3', 'retry-after-ms': String(CAP_MS), 'x-should-retry': 'false' };
    assert.deepEqual(waitOf(await relayed(gw, upstream, { 'retry-after': '3600' })), capped);
    assert.deepEqual(waitOf(await relayed(gw, upstream, { 'retry-after-ms': '3600000' })), capped);
    assert.deepEqual(waitOf(await relayed(gw, upstream, { 'retry-after': '99999999999999999999999999' })), capped, 'an absurd digit string');
    const inAnHour = new Date(Date.now() + 3_600_000).toUTCString();
    assert.deepEqual(waitOf(await relayed(gw, upstream, { 'retry-after': inAnHour })), capped, 'an HTTP-date an hour away');
    // A Messages client reads the same headers (Claude Code obeys x-should-retry).
    const m = await relayed(gw, upstream, { 'retry-after': '3600' }, 'messages');
    assert.deepEqual(waitOf(m), capped);
    assert.equal(m.body['type'], 'error');
  });

  test('values that name no wait are not relayed: the gateway names 1 s', async () => {
    const gatewayWait = { 'retry-after': '1', 'retry-after-ms': '1000', 'x-should-retry': 'true' };
    for (const headers of <Record<string, string>[]>[
      { 'retry-after': '-5' },
      { 'retry-after': 'soon' },
      { 'retry-after': '1.5e3' },
      { 'retry-after-ms': '-100' },
      { 'retry-after-ms': 'NaN' },
      { 'retry-after': 'Sun, 06 Nov 1994 08:49:37 GMT' },
    ]) {
      assert.deepEqual(waitOf(await relayed(gw, upstream, headers)), gatewayWait, JSON.stringify(headers));
    }
  });
});

describe('an upstream naming a wait past the cap, with attempts to spare', () => {
  test('the 429 is final at once: no later round sits out capped waits to ask the same account again', async () => {
    const { upstream, gw } = await startWithUpstream((url) => testConfigYaml(url, { routing: `  max_attempts: 4\n  retry_after_cap_ms: ${CAP_MS}` }));
    try {
      upstream.on(() => ({ status: 429, headers: { 'retry-after': '3600' }, body: fixture('openai-error-429-rate-limit-exceeded.json') }));
      const r = await postChat(gw, { model: 'gpt-test', messages: [{ role: 'user', content: 'hello' }] });
      assert.equal(r.status, 429, r.text);
      assert.equal(r.headers.get('x-should-retry'), 'false');
      assert.equal(upstream.requests.length, 1, 'the account was asked once');
      assert.ok(r.ms < CAP_MS, `answered without sitting out a capped wait (${r.ms} ms)`);
    } finally {
      await closeAll(gw, upstream);
    }
  });
});
