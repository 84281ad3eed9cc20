/**
 * Reasoning-effort levels above `xhigh` (`max`, `ultra`: Codex's catalog and Claude Code's
 * `--effort` offer them) and levels the gateway does not know, on every client API: never a
 * 400 from the gateway; the deeper levels are deep calls (the shed ladder's lower-effort
 * rung acts on them when the account is hot, and sends a level the target takes); an
 * unknown level counts as the model's default effort and is relayed as sent; a bridge to
 * Anthropic gives the deeper levels the largest thinking budget.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { hashKey } from '../../src/auth/keys.js';
import { deferred, type Deferred } from '../helpers/accounts.js';
import { FakeUpstream, type ReceivedRequest, type ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, closeAll, startGateway, waitFor, type TestGateway } from '../helpers/gateway.js';

/** A JSON reply of `text` in the wire API the request came in on (chat, Responses, Messages). */
function reply(req: ReceivedRequest, text: string): ScriptedReply {
  const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
  if (req.url.endsWith('/responses')) {
    const output = [{ type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] }];
    return {
      status: 200,
      body: {
        id: 'resp_1',
        object: 'response',
        created_at: 1,
        status: 'completed',
        model: 'm',
        output,
        usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 },
      },
    };
  }
  if (req.url.endsWith('/messages')) {
    return {
      status: 200,
      body: {
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'm',
        content: [{ type: 'text', text }],
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: 1, output_tokens: 1 },
      },
    };
  }
  return {
    status: 200,
    body: {
      id: 'c',
      object: 'chat.completion',
      created: 1,
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
      usage,
    },
  };
}

/** The prompt text of a received request, on any of the three wire APIs. */
function promptOf(req: ReceivedRequest): string {
  const b = req.json ?? {};
  const first = ((b['messages'] as { content: unknown }[] | undefined) ?? [])[0]?.content;
  return typeof b['input'] === 'string' ? b['input'] : typeof first === 'string' ? first : JSON.stringify(first ?? '');
}

describe('effort levels above xhigh, and unknown ones', () => {
  const a = new FakeUpstream();
  const claude = new FakeUpstream();
  let gw: TestGateway;
  let gate: Deferred;
  before(async () => {
    for (const u of [a, claude]) {
      await u.start();
      // A prompt "hold" keeps its call in flight (the account's one deep place) until the gate opens.
      u.on(async (req) => {
        if (promptOf(req).includes('hold')) await gate.promise;
        return reply(req, 'ok');
      });
    }
    gw = await startGateway(`
server: { log_level: warn }
upstreams:
  - { id: a, provider: openai-compatible, base_url: "${a.url}/v1", api_key: "\${TEST_UPSTREAM_KEY}", options: { responses: true }, capacity: { start: 1, ceiling: 1 } }
  - { id: claude, provider: anthropic, base_url: "${claude.url}/v1", api_key: "\${TEST_UPSTREAM_KEY}", capacity: { start: 1, ceiling: 1 } }
models:
  - name: deep
    reasoning: true
    deep_effort: high
    price: { input: 1, output: 1 }
    shed: { lower_effort: low }
    targets: [{ upstream: a, model: deep-a }]
  - name: claude-deep
    reasoning: true
    deep_effort: high
    price: { input: 1, output: 1 }
    shed: { lower_effort: minimal }
    targets: [{ upstream: claude, model: claude-upstream }]
keys:
  - { name: t, key_sha256: ${hashKey(CLIENT_KEY)} }
`);
  });
  beforeEach(() => {
    gate = deferred();
  });
  after(() => closeAll(gw, a, claude));

  const post = async (path: string, body: Record<string, unknown>) => {
    const res = await fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'x-api-key': CLIENT_KEY, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, shed: res.headers.get('x-switchyard-shed'), text: await res.text() };
  };
  const chat = (effort: string, prompt = 'x', model = 'deep') =>
    post('/v1/chat/completions', { model, reasoning_effort: effort, messages: [{ role: 'user', content: prompt }] });
  const responses = (effort: string, prompt = 'x') => post('/v1/responses', { model: 'deep', reasoning: { effort }, input: prompt });
  const messages = (effort: string, prompt = 'x') =>
    post('/v1/messages', { model: 'claude-deep', max_tokens: 100, output_config: { effort }, messages: [{ role: 'user', content: prompt }] });

  /** Runs `send` while a deep call holds the account's one deep place; returns its result. */
  async function whileHot<T>(up: FakeUpstream, hold: () => Promise<unknown>, send: () => Promise<T>): Promise<T> {
    const n = up.requests.length;
    const held = hold();
    await waitFor(() => up.requests.length === n + 1, 3_000, 'the held deep call');
    try {
      return await send();
    } finally {
      gate.resolve();
      await held;
    }
  }

  for (const level of ['max', 'ultra']) {
    test(`chat reasoning_effort "${level}": accepted, relayed, and deep (lowered to low when the account is hot)`, async () => {
      const cold = await chat(level);
      assert.equal(cold.status, 200, cold.text);
      assert.equal(a.requests.at(-1)!.json!['reasoning_effort'], level, 'relayed as sent to an upstream of the same API');
      const hot = await whileHot(
        a,
        () => chat('high', 'hold'),
        () => chat(level),
      );
      assert.equal(hot.status, 200, hot.text);
      assert.equal(hot.shed, `effort:${level}->low`);
      assert.equal(a.requests.at(-1)!.json!['reasoning_effort'], 'low');
    });
  }

  test('Responses reasoning.effort "ultra": accepted and deep; the lowered call carries reasoning.effort low', async () => {
    const cold = await responses('ultra');
    assert.equal(cold.status, 200, cold.text);
    const hot = await whileHot(
      a,
      () => responses('high', 'hold'),
      () => responses('ultra'),
    );
    assert.equal(hot.status, 200, hot.text);
    assert.equal(hot.shed, 'effort:ultra->low');
    assert.deepEqual(a.requests.at(-1)!.json!['reasoning'], { effort: 'low' });
  });

  test('an unknown level counts as the default effort: accepted, relayed as sent, not deep', async () => {
    const hot = await whileHot(
      a,
      () => chat('high', 'hold'),
      () => chat('turbo'),
    );
    assert.equal(hot.status, 200, hot.text);
    assert.equal(hot.shed, null, 'a medium call needs no deep place');
    assert.equal(a.requests.at(-1)!.json!['reasoning_effort'], 'turbo');
  });

  test('Messages output_config.effort "max" is deep; the lowered call is sent a level Anthropic takes (low, not minimal)', async () => {
    const cold = await messages('max');
    assert.equal(cold.status, 200, cold.text);
    assert.deepEqual(claude.requests.at(-1)!.json!['output_config'], { effort: 'max' });
    const hot = await whileHot(
      claude,
      () => messages('high', 'hold'),
      () => messages('max'),
    );
    assert.equal(hot.status, 200, hot.text);
    assert.equal(hot.shed, 'effort:max->minimal');
    assert.deepEqual(claude.requests.at(-1)!.json!['output_config'], { effort: 'low' });
  });

  test('chat -> Anthropic: "ultra" gets the largest thinking budget (xhigh\'s), an unknown level none, neither a 400', async () => {
    const deep = await chat('ultra', 'x', 'claude-deep');
    assert.equal(deep.status, 200, deep.text);
    assert.deepEqual(claude.requests.at(-1)!.json!['thinking'], { type: 'enabled', budget_tokens: 32000 });
    const unknown = await chat('turbo', 'x', 'claude-deep');
    assert.equal(unknown.status, 200, unknown.text);
    assert.equal(claude.requests.at(-1)!.json!['thinking'], undefined);
  });
});
