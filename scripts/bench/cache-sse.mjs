// The `stream: true` answers of scripts/bench/cache-provider.mjs, in each wire API's own SSE
// shapes as recorded in test/fixtures/ (anthropic-messages-stream-text.chunks.jsonl and
// -thinking.sse, openai-responses-stream-text.sse, openai-chat-stream-text-include-usage.sse
// and -no-usage-2023.sse), with the usage where each provider puts it:
// - Messages: `message_start` carries input_tokens / cache_read_input_tokens /
//   cache_creation_input_tokens, `message_delta` the output tokens;
// - Responses: `response.completed` carries usage with input_tokens_details.cached_tokens;
// - chat completions: a last chunk with `choices: []` and the usage, only when
//   `stream_options.include_usage` is set (and then every other chunk has `usage: null`).
// An answer is three parts: `head` (sent at the time to first token, with the first text delta),
// `deltas` (one text delta each, spread over the rest of the call) and `tail` (sent with the last).
import { createHash } from 'node:crypto';

const sse = (event, data) => `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`;

/** `reply` cut into `n` pieces. */
function pieces(reply, n) {
  const size = Math.ceil(reply.length / n);
  return Array.from({ length: n }, (_v, i) => reply.slice(i * size, (i + 1) * size)).filter((p) => p.length > 0);
}

/**
 * The Responses API `usage` object (shape as in the recorded responses, test/fixtures) for a
 * call of `usage` {input, cached} prompt tokens and `outTokens` output tokens.
 */
export function responsesUsage(usage, outTokens) {
  return {
    input_tokens: usage.input,
    input_tokens_details: { cached_tokens: usage.cached },
    output_tokens: outTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.input + outTokens,
  };
}

/**
 * The SSE answer to `body` on `api` ('messages' | 'responses' | 'chat').
 * @param usage {input, cached, written} (scripts/bench/cache-provider.mjs cacheCall)
 * @param outTokens the reply's output tokens
 * @returns {{ head: string, deltas: string[], tail: string }}
 */
export function sseAnswer(api, body, usage, reply, outTokens, n = 6) {
  const model = String(body.model ?? 'm');
  const id = createHash('sha1').update(reply).digest('hex').slice(0, 16);
  const text = pieces(reply, n);
  const uncached = usage.input - usage.cached - usage.written;
  if (api === 'messages') {
    const cacheUsage = { input_tokens: uncached, cache_creation_input_tokens: usage.written, cache_read_input_tokens: usage.cached };
    const delta = (t) => sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: t } });
    const message = { model, id: `msg_${id}`, type: 'message', role: 'assistant', content: [], stop_reason: null, stop_sequence: null };
    const startUsage = {
      ...cacheUsage,
      cache_creation: { ephemeral_5m_input_tokens: usage.written, ephemeral_1h_input_tokens: 0 },
      output_tokens: 1,
      service_tier: 'standard',
    };
    return {
      head:
        sse('message_start', { type: 'message_start', message: { ...message, usage: startUsage } }) +
        sse('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }) +
        sse('ping', { type: 'ping' }) +
        delta(text[0]),
      deltas: text.slice(1).map(delta),
      tail:
        sse('content_block_stop', { type: 'content_block_stop', index: 0 }) +
        sse('message_delta', {
          type: 'message_delta',
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: { ...cacheUsage, output_tokens: outTokens },
        }) +
        sse('message_stop', { type: 'message_stop' }),
    };
  }
  if (api === 'responses') {
    let seq = 0;
    const ev = (type, data) => sse(type, { type, ...data, sequence_number: seq++ });
    const itemId = `msg_${id}`;
    const base = { id: `resp_${id}`, object: 'response', created_at: Math.floor(Date.now() / 1000), model, store: body.store ?? true };
    const part = (t) => ({ type: 'output_text', annotations: [], logprobs: [], text: t });
    const item = (status, content) => ({ id: itemId, type: 'message', status, content, role: 'assistant' });
    const delta = (t) => ev('response.output_text.delta', { content_index: 0, delta: t, item_id: itemId, logprobs: [], output_index: 0 });
    const head =
      ev('response.created', { response: { ...base, status: 'in_progress', output: [], usage: null } }) +
      ev('response.in_progress', { response: { ...base, status: 'in_progress', output: [], usage: null } }) +
      ev('response.output_item.added', { item: item('in_progress', []), output_index: 0 }) +
      ev('response.content_part.added', { content_index: 0, item_id: itemId, output_index: 0, part: part('') }) +
      delta(text[0]);
    const deltas = text.slice(1).map(delta);
    const done = item('completed', [part(reply)]);
    const tail =
      ev('response.output_text.done', { content_index: 0, item_id: itemId, logprobs: [], output_index: 0, text: reply }) +
      ev('response.content_part.done', { content_index: 0, item_id: itemId, output_index: 0, part: part(reply) }) +
      ev('response.output_item.done', { item: done, output_index: 0 }) +
      ev('response.completed', {
        response: {
          ...base,
          status: 'completed',
          completed_at: Math.floor(Date.now() / 1000),
          output: [done],
          usage: responsesUsage(usage, outTokens),
        },
      });
    return { head, deltas, tail };
  }
  const withUsage = body.stream_options?.include_usage === true;
  const chunk = (choices, extra = {}) =>
    sse(null, {
      id: `chatcmpl-${id}`,
      object: 'chat.completion.chunk',
      created: Math.floor(Date.now() / 1000),
      model,
      choices,
      ...(withUsage ? { usage: null } : {}),
      ...extra,
    });
  const delta = (t) => chunk([{ index: 0, delta: { content: t }, logprobs: null, finish_reason: null }]);
  const usageChunk = {
    usage: {
      prompt_tokens: usage.input,
      completion_tokens: outTokens,
      total_tokens: usage.input + outTokens,
      prompt_tokens_details: { cached_tokens: usage.cached, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    },
  };
  return {
    head: chunk([{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]) + delta(text[0]),
    deltas: text.slice(1).map(delta),
    tail: chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' }]) + (withUsage ? chunk([], usageChunk) : '') + 'data: [DONE]\n\n',
  };
}
