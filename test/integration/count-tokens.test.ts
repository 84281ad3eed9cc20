/**
 * `POST /v1/messages/count_tokens` estimates (a model with no Anthropic account) and `tpm`
 * reservations count what the model reads besides text (issue 29: a 4,000-token tool result
 * counted 0, so Claude Code compacted too late and a tpm-limited key reserved ~20 tokens
 * for it); a body nested 5,000 deep is a 400 on every model route, never a 5xx; counting
 * takes nothing from the key's rpm; its `request finished` line names the API, the model
 * and the model as sent, as a model call's does.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { hashKey } from '../../src/auth/keys.js';
import { IMAGE_TOKENS, PAGE_TOKENS } from '../../src/usage/prompt-parts.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { anthropicConfigYaml, CLIENT_KEY, closeAll, finishedLine, OTHER_KEY, startGateway, testConfigYaml, type TestGateway } from '../helpers/gateway.js';

const TPM_KEY = 'sk-test-count-tpm-0123456789abcdef';
const RPM_KEY = 'sk-test-count-rpm-0123456789abcdef';
const CHAT_ANSWER = {
  id: 'c',
  object: 'chat.completion',
  created: 1,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
};

/** About 4,000 o200k tokens of log-like text. */
const BIG = Array.from({ length: 1400 }, (_, i) => `line ${i}: upstream ok`).join('\n');
const BIG_TOKENS = countTokens(BIG);

/** A Messages body whose user turn is `blocks`. */
const turn = (blocks: unknown[]): Anthropic.MessageCountTokensParams => ({
  model: 'gpt-test',
  messages: [{ role: 'user', content: blocks as Anthropic.ContentBlockParam[] }],
});

/** `{"model":…,"messages":[{"role":"user","content":[<5,000 nested tool_result blocks>]}]}`, built as text (JSON.stringify overflows on it). */
function deepBody(extra = ''): string {
  const deep = '{"type":"tool_result","tool_use_id":"t","content":['.repeat(5000) + '{"type":"text","text":"x"}' + ']}'.repeat(5000);
  return `{"model":"gpt-test",${extra}"messages":[{"role":"user","content":[${deep}]}]}`;
}

const post = (gw: TestGateway, path: string, key: string, body: string): Promise<Response> =>
  fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body });

/** The fields of a count's `request finished` line that say what was asked of whom, and how it ended. */
async function countLine(gw: TestGateway, key: string, model: string): Promise<Record<string, unknown>> {
  const res = await post(gw, '/v1/messages/count_tokens', key, JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }));
  await res.text();
  const line = await finishedLine(gw, res.headers.get('x-request-id')!);
  const { api, model: named, requested_model, upstream, status, outcome } = line;
  return { api, model: named, requested_model, upstream, status, outcome };
}

describe('count_tokens estimates and tpm reservations count tool results, tool inputs, images and documents', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;
  let client: Anthropic;

  before(async () => {
    upstream = await new FakeUpstream().start();
    upstream.on(() => ({ status: 200, body: CHAT_ANSWER }));
    const keys = `  - name: tpm-3000\n    key_sha256: ${hashKey(TPM_KEY)}\n    limits: { tpm: 3000 }\n  - name: rpm-2\n    key_sha256: ${hashKey(RPM_KEY)}\n    limits: { rpm: 2 }\n`;
    gw = await startGateway(`${testConfigYaml(upstream.url)}${keys}`);
    client = new Anthropic({ apiKey: CLIENT_KEY, baseURL: gw.url, maxRetries: 0 });
  });
  after(() => closeAll(gw, upstream));

  test('a ~4,000-token tool_result and a big tool_use.input are estimated near the tokenizer count of their text', async () => {
    const result = await client.messages.countTokens(turn([{ type: 'tool_result', tool_use_id: 'toolu_1', content: BIG }])).withResponse();
    assert.equal(result.response.headers.get('x-switchyard-estimated'), 'true');
    assert.ok(result.data.input_tokens >= BIG_TOKENS && result.data.input_tokens <= BIG_TOKENS * 1.1, `${result.data.input_tokens} for ${BIG_TOKENS}`);
    const input = { path: 'notes.txt', content: BIG };
    const used = await client.messages.countTokens({
      model: 'gpt-test',
      messages: [
        { role: 'user', content: 'write it' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'write', input }] },
      ],
    });
    const expected = countTokens(JSON.stringify(input));
    assert.ok(used.input_tokens >= expected * 0.95 && used.input_tokens <= expected * 1.15, `${used.input_tokens} for ${expected}`);
  });

  test('an image and a PDF document count their estimates', async () => {
    const text = (await client.messages.countTokens(turn([{ type: 'text', text: 'describe' }]))).input_tokens;
    const png = Buffer.alloc(120_000, 3).toString('base64');
    const image = await client.messages.countTokens(
      turn([
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
        { type: 'text', text: 'describe' },
      ]),
    );
    assert.equal(image.input_tokens, text + IMAGE_TOKENS);
    const pdf = Buffer.alloc(120_000, 1).toString('base64');
    const doc = await client.messages.countTokens(
      turn([
        { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf } },
        { type: 'text', text: 'describe' },
      ]),
    );
    assert.equal(doc.input_tokens, text + 3 * PAGE_TOKENS);
  });

  test('a tpm-limited key is refused a big tool result before the upstream (its reservation counts it)', async () => {
    const limited = new Anthropic({ apiKey: TPM_KEY, baseURL: gw.url, maxRetries: 0 });
    const sent = upstream.requests.length;
    const err = await limited.messages
      .create({ ...turn([{ type: 'tool_result', tool_use_id: 'toolu_1', content: BIG }]), max_tokens: 10 })
      .catch((e: unknown) => e);
    assert.ok(err instanceof Anthropic.RateLimitError, String(err));
    assert.equal(upstream.requests.length, sent);
    // A small prompt on the same key still goes through.
    const ok = await limited.messages.create({ ...turn([{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'done' }]), max_tokens: 10 });
    assert.equal(ok.content[0]?.type, 'text');
  });

  test('a body nested 5,000 deep: count_tokens and the model routes answer 400, the upstream is not called', async () => {
    const sent = upstream.requests.length;
    for (const [path, key, body] of [
      ['/v1/messages/count_tokens', CLIENT_KEY, deepBody()],
      ['/v1/messages', TPM_KEY, deepBody('"max_tokens":10,')],
      ['/v1/chat/completions', CLIENT_KEY, deepBody()],
    ] as const) {
      const res = await post(gw, path, key, body);
      const text = await res.text();
      assert.equal(res.status, 400, `${path}: ${text.slice(0, 200)}`);
      assert.match(text, /levels deep/);
    }
    assert.equal(upstream.requests.length, sent);
  });

  test('count_tokens takes nothing from the key rpm: a 2-rpm key counts 3 times, then makes its 2 calls', async () => {
    const rpm = new Anthropic({ apiKey: RPM_KEY, baseURL: gw.url, maxRetries: 0 });
    for (let i = 0; i < 3; i++) assert.ok((await rpm.messages.countTokens(turn([{ type: 'text', text: 'hi' }]))).input_tokens > 0);
    for (let i = 0; i < 2; i++) await rpm.messages.create({ ...turn([{ type: 'text', text: 'hi' }]), max_tokens: 10 });
    const third = await rpm.messages.create({ ...turn([{ type: 'text', text: 'hi' }]), max_tokens: 10 }).catch((e: unknown) => e);
    assert.ok(third instanceof Anthropic.RateLimitError, String(third));
  });

  test('the log line of an estimate names the API, the model and the model as sent; of a refusal, the model as sent', async () => {
    assert.deepEqual(await countLine(gw, CLIENT_KEY, 'gpt-test'), {
      api: 'messages/count_tokens',
      model: 'gpt-test',
      requested_model: 'gpt-test',
      upstream: null,
      status: 200,
      outcome: 'ok',
    });
    // team-limited may use reasoner-test only.
    assert.deepEqual(await countLine(gw, OTHER_KEY, 'gpt-test'), {
      api: 'messages/count_tokens',
      model: null,
      requested_model: 'gpt-test',
      upstream: null,
      status: 404,
      outcome: 'client_error',
    });
  });
});

describe('count_tokens on a model with an Anthropic account', () => {
  test('the log line names the API, the model, the model as sent (an alias) and the account that counted', async () => {
    const claude = await new FakeUpstream().start();
    claude.on(() => ({ status: 200, body: { input_tokens: 42 } }));
    const gw = await startGateway(
      anthropicConfigYaml(claude.url).replace('  - name: claude-test\n', '  - name: claude-test\n    aliases: ["claude-latest"]\n'),
    );
    try {
      assert.deepEqual(await countLine(gw, CLIENT_KEY, 'claude-latest'), {
        api: 'messages/count_tokens',
        model: 'claude-test',
        requested_model: 'claude-latest',
        upstream: 'claude',
        status: 200,
        outcome: 'ok',
      });
      assert.equal(claude.requests.length, 1);
    } finally {
      await closeAll(gw, claude);
    }
  });

  test('a body nested 5,000 deep is a 400 and the vendor is not asked', async () => {
    const claude = await new FakeUpstream().start();
    claude.on(() => ({ status: 200, body: { input_tokens: 42 } }));
    const gw = await startGateway(anthropicConfigYaml(claude.url));
    try {
      const res = await post(gw, '/v1/messages/count_tokens', CLIENT_KEY, deepBody().replace('"gpt-test"', '"claude-test"'));
      assert.equal(res.status, 400, await res.text());
      assert.equal(claude.requests.length, 0);
    } finally {
      await closeAll(gw, claude);
    }
  });
});
