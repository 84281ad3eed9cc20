/**
 * Every OpenAI-compatible recording, replayed by a fake upstream, gives the official
 * `openai` client the same chunk sequence through Switchyard as going direct, and the
 * usage Switchyard records equals what the upstream reported.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import type { FakeUpstream } from '../helpers/fake-upstream.js';
import { replay, sseEvents } from '../helpers/recordings.js';
import { closeAll, startWithUpstream, waitFor, type TestGateway } from '../helpers/gateway.js';

interface Collected {
  chunks: unknown[];
  error: { status: number | undefined; message: string } | null;
}

async function collect(client: OpenAI, includeUsage: boolean): Promise<Collected> {
  const chunks: unknown[] = [];
  try {
    const stream = await client.chat.completions.create({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'hello' }],
      stream: true,
      ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
    });
    for await (const c of stream) chunks.push(c);
    return { chunks, error: null };
  } catch (err) {
    const e = err as { status?: number; message: string };
    return { chunks, error: { status: e.status, message: e.message } };
  }
}

/** The last `usage` object in a recording, as the upstream reported it. */
function recordedUsage(name: string): Record<string, unknown> | null {
  let usage: Record<string, unknown> | null = null;
  for (const e of sseEvents(name)) {
    const m = /^data: (\{.*\})\s*$/s.exec(e);
    if (!m) continue;
    const c = JSON.parse(m[1]!) as { usage?: Record<string, unknown> | null };
    if (c.usage) usage = c.usage;
  }
  return usage;
}

const RECORDINGS = [
  'openai-chat-stream-text-include-usage.sse',
  'openai-chat-stream-parallel-tool-calls.sse',
  'openai-chat-stream-tool-call-argument-deltas.sse',
  'deepseek-reasoner-stream.sse',
  'openrouter-chat-stream-reasoning-claude.sse',
  'openai-chat-stream-text-no-usage-2023.sse',
];

describe('recorded streams relay unchanged', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;
  let direct: OpenAI;

  before(async () => {
    ({ upstream, gw } = await startWithUpstream());
    direct = new OpenAI({ apiKey: 'direct', baseURL: `${upstream.url}/v1`, maxRetries: 0 });
  });
  after(() => closeAll(gw, upstream));

  for (const name of RECORDINGS) {
    for (const includeUsage of [true, false]) {
      test(`${name} include_usage=${includeUsage}`, async () => {
        upstream.on(replay(name));
        const want = await collect(direct, includeUsage);
        const before = gw.finished().length;
        const got = await collect(gw.client(), includeUsage);
        assert.equal(got.error, null, `unexpected error ${JSON.stringify(got.error)}`);
        assert.ok(want.chunks.length > 0);
        assert.deepEqual(got.chunks, want.chunks);

        const line = await waitFor(() => gw.finished()[before], 2000, 'request log line');
        assert.equal(line['status'], 200);
        assert.equal(line['outcome'], 'ok');
        const usage = recordedUsage(name);
        const tokens = line['tokens'] as Record<string, number>;
        if (usage) {
          assert.equal(tokens['input'], usage['prompt_tokens']);
          assert.equal(tokens['output'], usage['completion_tokens']);
          const details = (usage['completion_tokens_details'] ?? {}) as Record<string, number>;
          assert.equal(tokens['reasoning'], details['reasoning_tokens'] ?? 0);
          assert.equal(line['tokens_estimated'], false);
          // The gateway asked the upstream for usage even when the client did not.
          const sent = upstream.requests.at(-1)!.json!;
          assert.deepEqual(sent['stream_options'], { include_usage: true });
        } else {
          assert.equal(line['tokens_estimated'], true);
          assert.ok(tokens['output']! > 0);
        }
      });
    }
  }

  test('a chunk with a top-level error mid-stream ends in an error the client raises', async () => {
    upstream.on(replay('openrouter-chat-stream-midstream-error.sse'));
    const want = await collect(direct, false);
    const before = gw.finished().length;
    const got = await collect(gw.client(), false);
    assert.ok(want.error, 'direct client raises on the error chunk');
    assert.ok(got.error, 'gateway client raises too');
    assert.deepEqual(got.chunks, want.chunks);
    assert.match(got.error.message, /Token limit reached/);
    const line = await waitFor(() => gw.finished()[before], 2000, 'request log line');
    assert.equal(line['outcome'], 'upstream_error');
    assert.equal(line['error_class'], 'stream');
  });
});
