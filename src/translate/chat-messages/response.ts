/**
 * Anthropic Messages response -> OpenAI `chat.completion` (non-streaming), plus the
 * stop-reason and usage mappings the stream translator shares.
 *
 * Anthropic facts used (API reference, "Messages"): the response is `{id, type:'message',
 * role, model, content: [blocks], stop_reason, stop_sequence, usage}`; `usage.input_tokens`
 * counts only the uncached input, cached reads and cache writes are reported apart in
 * `cache_read_input_tokens` / `cache_creation_input_tokens`, so OpenAI's `prompt_tokens`
 * (which includes cached tokens) is their sum.
 */
import { asText } from '../../util/as-text.js';

/** Anthropic `usage` as far as it is read here (token counts; any may be absent or null). */
export interface AnthropicUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
}

/** The OpenAI `usage` object produced (token counts). */
export interface OpenAIUsage {
  /** input + cache read + cache creation tokens. */
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
  /** Anthropic's raw counts, kept so cost can price cache writes and reads apart. */
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
}

function count(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0;
}

/** Builds the OpenAI `usage` object from Anthropic token counts. */
export function toOpenAIUsage(u: Readonly<AnthropicUsage>): OpenAIUsage {
  const input = count(u.input_tokens);
  const cacheRead = count(u.cache_read_input_tokens);
  const cacheCreation = count(u.cache_creation_input_tokens);
  const output = count(u.output_tokens);
  const prompt = input + cacheRead + cacheCreation;
  return {
    prompt_tokens: prompt,
    completion_tokens: output,
    total_tokens: prompt + output,
    prompt_tokens_details: { cached_tokens: cacheRead },
    cache_read_input_tokens: cacheRead,
    cache_creation_input_tokens: cacheCreation,
  };
}

/**
 * Anthropic `stop_reason` -> OpenAI `finish_reason`. `pause_turn` (a server tool paused a
 * long turn) has no OpenAI equivalent and ends the reply normally; unknown or missing
 * reasons give `stop`.
 */
export function toFinishReason(stopReason: unknown): 'stop' | 'length' | 'tool_calls' | 'content_filter' {
  switch (stopReason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    default:
      // end_turn, stop_sequence, pause_turn
      return 'stop';
  }
}

/** One OpenAI tool call of an assistant message. */
export interface OpenAIToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/**
 * Translates a complete Anthropic message.
 * @param msg the parsed JSON body of a 200 Messages response.
 * @param nowSeconds `created` (Unix seconds); defaults to now.
 * @returns an OpenAI `chat.completion` object with one choice. Only `text`, `thinking`
 *   and client `tool_use` blocks are carried; `server_tool_use`, server tool results and
 *   `redacted_thinking` are dropped (the client can neither see nor execute them).
 */
export function toChatCompletion(msg: Readonly<Record<string, unknown>>, nowSeconds = Math.floor(Date.now() / 1000)): Record<string, unknown> {
  const texts: string[] = [];
  const thinking: string[] = [];
  const toolCalls: OpenAIToolCall[] = [];
  const content = Array.isArray(msg['content']) ? (msg['content'] as unknown[]) : [];
  for (const raw of content) {
    if (!raw || typeof raw !== 'object') continue;
    const block = raw as Record<string, unknown>;
    switch (block['type']) {
      case 'text':
        if (typeof block['text'] === 'string') texts.push(block['text']);
        break;
      case 'thinking':
        if (typeof block['thinking'] === 'string') thinking.push(block['thinking']);
        break;
      case 'tool_use':
        toolCalls.push({
          id: asText(block['id'] ?? ''),
          type: 'function',
          function: { name: asText(block['name'] ?? ''), arguments: JSON.stringify(block['input'] ?? {}) },
        });
        break;
      default:
        break;
    }
  }
  const message: Record<string, unknown> = {
    role: 'assistant',
    content: texts.length > 0 ? texts.join('') : null,
    refusal: null,
  };
  if (toolCalls.length > 0) message['tool_calls'] = toolCalls;
  if (thinking.length > 0) message['reasoning_content'] = thinking.join('');
  const usage = msg['usage'] && typeof msg['usage'] === 'object' ? (msg['usage'] as AnthropicUsage) : {};
  return {
    id: asText(msg['id'] ?? ''),
    object: 'chat.completion',
    created: nowSeconds,
    model: asText(msg['model'] ?? ''),
    choices: [{ index: 0, message, logprobs: null, finish_reason: toFinishReason(msg['stop_reason']) }],
    usage: toOpenAIUsage(usage),
  };
}
