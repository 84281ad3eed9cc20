/**
 * Review 6: failing reproductions of bugs found while exercising the anthropic provider
 * (chat completions translated to Messages) as a user would.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, anthropicConfigYaml, startGateway, type TestGateway } from '../helpers/gateway.js';
import { anthropicEvents } from '../helpers/recordings.js';

const yaml = (url: string) => anthropicConfigYaml(url, '  max_attempts: 3\n  backoff_base_ms: 5\n  backoff_cap_ms: 10');

const TEXT = 'anthropic-messages-stream-text.chunks.jsonl';

function recordedText(): string {
  let text = '';
  for (const e of anthropicEvents(TEXT)) {
    const m = /"text_delta","text":"((?:[^"\\]|\\.)*)"/.exec(e);
    if (m) text += JSON.parse(`"${m[1]}"`) as string;
  }
  return text;
}

describe('review6: anthropic translation', () => {
  let upstream: FakeUpstream;
  let gw: TestGateway;

  // A fresh gateway per test: retry budgets and cooldowns must not carry over.
  before(async () => {
    upstream = await new FakeUpstream().start();
  });
  after(async () => {
    await upstream.close();
  });
  beforeEach(async () => {
    upstream.requests.length = 0;
    gw = await startGateway(yaml(upstream.url));
  });
  afterEach(async () => {
    await gw.close();
  });

  // README (API, Streams): a stream is broken only when it ends "with neither [DONE] nor a
  // finish_reason". An Anthropic stream that delivered message_delta(stop_reason) but no
  // message_stop has a finish_reason; the answer is complete. Observed: the translator
  // fails the whole stream in _flush, the buffered chunks are discarded (the stream is
  // destroyed with the error), the client gets 502 JSON with no content, and the gateway
  // re-sends the prompt to the upstream max_attempts times (each attempt billed upstream).
  test('a stream with message_delta but no message_stop, in one read, still reaches the client', async () => {
    const events = anthropicEvents(TEXT).filter((e) => !e.includes('message_stop'));
    upstream.on(() => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, steps: [events.join('')] }));
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-test', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const body = await res.text();
    assert.equal(res.status, 200, `status ${res.status}: ${body}`);
    assert.match(res.headers.get('content-type') ?? '', /text\/event-stream/);
    let text = '';
    for (const line of body.split('\n')) {
      if (!line.startsWith('data: {"id"')) continue;
      const chunk = JSON.parse(line.slice(6)) as { choices: { delta?: { content?: string } }[] };
      text += chunk.choices[0]?.delta?.content ?? '';
    }
    assert.equal(text, recordedText());
    assert.equal(upstream.requests.length, 1, 'the completed answer must not be requested again');
  });

  // Same root cause with a malformed event: README says "Events before an error in the same
  // read still go out first", and a stream that broke after its first event is not retried.
  // Observed: every event translated from that read is dropped, the client gets 502 JSON
  // ("The upstream connection failed mid-stream.") and the upstream is called max_attempts times.
  test('events translated before a non-JSON event in the same read are relayed, not retried', async () => {
    const events = anthropicEvents(TEXT).slice(0, 4); // message_start, block_start, ping, "Hello"
    upstream.on(() => ({
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      steps: [events.join('') + 'event: content_block_delta\ndata: {not json\n\n'],
    }));
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-test', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    const body = await res.text();
    assert.equal(res.status, 200, `status ${res.status}: ${body}`);
    assert.match(body, /"content":"Hello"/);
    assert.match(body, /data: \{"error":/);
    assert.equal(upstream.requests.length, 1);
  });

  // Anthropic (Extended thinking, "Preserving thinking blocks"): with thinking enabled, the
  // last assistant turn of a tool loop must start with its thinking block; otherwise 400
  // "Expected `thinking` or `redacted_thinking`, but found `tool_use`". OpenAI chat clients
  // cannot send thinking blocks (signatures are dropped by the translation), so every second
  // turn of an agent tool loop with reasoning_effort fails against api.anthropic.com.
  // Expected: the translation must not send `thinking` together with a trailing assistant
  // tool_use turn that has no thinking block (drop thinking for that call, as other gateways do).
  test('reasoning_effort in a tool-result follow-up does not produce a request Anthropic rejects', async () => {
    upstream.on((req) => {
      const body = req.json as { thinking?: unknown; messages: { role: string; content: { type: string }[] }[] };
      const lastAssistant = [...body.messages].reverse().find((m) => m.role === 'assistant');
      if (body.thinking && lastAssistant && lastAssistant.content.some((b) => b.type === 'tool_use') && lastAssistant.content[0]?.type !== 'thinking') {
        return {
          status: 400,
          body: {
            type: 'error',
            error: {
              type: 'invalid_request_error',
              message:
                'messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant` message must start with a thinking block.',
            },
          },
        };
      }
      return {
        status: 200,
        body: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-upstream-id', content: [{ type: 'text', text: 'Sunny.' }], stop_reason: 'end_turn', usage: { input_tokens: 10, output_tokens: 2 } },
      };
    });
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'claude-test',
        reasoning_effort: 'medium',
        tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } }],
        messages: [
          { role: 'user', content: 'weather in Paris?' },
          { role: 'assistant', content: null, reasoning_content: 'I should call the tool.', tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }] },
          { role: 'tool', tool_call_id: 'toolu_1', content: 'sunny' },
        ],
      }),
    });
    const body = await res.text();
    assert.equal(res.status, 200, `status ${res.status}: ${body}`);
  });
});
