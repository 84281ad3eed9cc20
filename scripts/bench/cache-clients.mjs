// The three client styles of `npm run bench:cache`, one agent turn each, through the vendors' SDKs,
// streamed (`stream: true`, as Claude Code and Codex always call) or not:
//   claude  Anthropic SDK, /v1/messages, `x-claude-code-session-id`, metadata.user_id, cache_control
//           on the tools, the system prompt and the last message (as Claude Code sends)
//   codex   OpenAI SDK, /v1/responses, `prompt_cache_key` and a `session_id` header, no breakpoints
//   chat    OpenAI SDK, /v1/chat/completions, `user` (streamed with stream_options.include_usage)
// A streamed turn consumes every event and ends at the last; one that ends without its API's
// closing event (message_stop, response.completed, a finish_reason) throws.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

/** The SDK client for `style` against the gateway (or the provider) at `baseURL`. */
export function client(style, baseURL, apiKey) {
  return style === 'claude' ? new Anthropic({ baseURL, apiKey, maxRetries: 2 }) : new OpenAI({ baseURL: `${baseURL}/v1`, apiKey, maxRetries: 2 });
}

/** The reply text of a streamed answer in `style`; throws when the stream ends unfinished. */
async function consume(style, events) {
  let text = '';
  let finished = false;
  for await (const ev of events) {
    if (style === 'claude') {
      if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
      if (ev.type === 'message_stop') finished = true;
    } else if (style === 'codex') {
      if (ev.type === 'response.output_text.delta') text += ev.delta;
      if (ev.type === 'response.completed') finished = true;
    } else {
      text += ev.choices[0]?.delta?.content ?? '';
      if (ev.choices[0]?.finish_reason) finished = true;
    }
  }
  if (!finished) throw new Error(`${style} stream ended without its closing event`);
  return text;
}

/**
 * One turn of session `sess` in `style`; resolves when the SDK's call does (its own retries
 * included) and, streamed, at the last event.
 * @returns {{ reply: string, cache: string | null }} the reply and the answer's x-switchyard-cache header
 */
export async function turn(style, sdk, sess, history, model, uuid, stream) {
  let call;
  if (style === 'claude') {
    const tools = sess.tools.map((t, k) => ({
      name: t.name,
      description: t.description,
      input_schema: t.schema,
      ...(k === sess.tools.length - 1 ? { cache_control: { type: 'ephemeral' } } : {}),
    }));
    const messages = history.map((m, i) =>
      i === history.length - 1 ? { role: m.role, content: [{ type: 'text', text: m.content, cache_control: { type: 'ephemeral' } }] } : m,
    );
    call = sdk.messages.create(
      {
        model,
        max_tokens: 1024,
        system: [{ type: 'text', text: sess.system, cache_control: { type: 'ephemeral' } }],
        tools,
        messages,
        metadata: { user_id: `user_bench_account__session_${uuid}` },
        ...(stream ? { stream: true } : {}),
      },
      { headers: { 'x-claude-code-session-id': uuid } },
    );
  } else if (style === 'codex') {
    const tools = sess.tools.map((t) => ({ type: 'function', name: t.name, description: t.description, parameters: t.schema, strict: false }));
    call = sdk.responses.create(
      { model, instructions: sess.system, input: history, tools, prompt_cache_key: uuid, store: false, ...(stream ? { stream: true } : {}) },
      { headers: { session_id: uuid } },
    );
  } else {
    const tools = sess.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.schema } }));
    call = sdk.chat.completions.create({
      model,
      messages: [{ role: 'system', content: sess.system }, ...history],
      tools,
      user: uuid,
      ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    });
  }
  const { data, response } = await call.withResponse();
  const cache = response.headers.get('x-switchyard-cache');
  if (stream) return { reply: await consume(style, data), cache };
  if (style === 'claude') return { reply: data.content.map((b) => b.text ?? '').join(''), cache };
  if (style === 'codex') return { reply: data.output_text, cache };
  return { reply: data.choices[0].message.content ?? '', cache };
}
