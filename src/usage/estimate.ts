/**
 * Token counts for a stream that ended without upstream usage (client abort, upstream
 * cut): the gateway counts what it saw with `gpt-tokenizer` (o200k_base, the encoding of
 * OpenAI's current models; other providers' tokenizers differ, so the result is marked
 * estimated). The tokenizer's tables are large, so they are loaded on first use only and
 * nothing here runs on a request that got its usage from the upstream.
 */
import type { Usage } from './usage.js';

type CountTokens = (text: string) => number;

let loading: Promise<CountTokens> | null = null;

function tokenizer(): Promise<CountTokens> {
  loading ??= import('gpt-tokenizer/encoding/o200k_base').then((m) => (text: string) => (text ? m.countTokens(text) : 0));
  return loading;
}

/** Per-message framing tokens in OpenAI's chat format (role and separators), and the reply primer. */
const PER_MESSAGE = 3;
const REPLY_PRIMER = 3;

function pushText(v: unknown, out: string[]): void {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const part of v) pushText(part, out);
  else if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if (typeof o['text'] === 'string') out.push(o['text']);
    if (typeof o['refusal'] === 'string') out.push(o['refusal']);
  }
}

/** The text of the request messages: content (strings and text parts), names, tool calls. */
function messageTexts(messages: unknown): { texts: string[]; count: number } {
  const texts: string[] = [];
  if (!Array.isArray(messages)) return { texts, count: 0 };
  for (const m of messages) {
    if (!m || typeof m !== 'object') continue;
    const msg = m as Record<string, unknown>;
    if (typeof msg['role'] === 'string') texts.push(msg['role']);
    if (typeof msg['name'] === 'string') texts.push(msg['name']);
    pushText(msg['content'], texts);
    if (Array.isArray(msg['tool_calls'])) {
      for (const call of msg['tool_calls'] as unknown[]) {
        const fn = (call as { function?: { name?: unknown; arguments?: unknown } } | null)?.function;
        if (typeof fn?.name === 'string') texts.push(fn.name);
        if (typeof fn?.arguments === 'string') texts.push(fn.arguments);
      }
    }
  }
  return { texts, count: messages.length };
}

/**
 * Counts usage from the text of the delta events seen (output and reasoning, extracted
 * by the API's `deltaTexts`) and the request's prompt as chat-style `messages` (input). `reasoning` is a part of `output`, as in
 * upstream-reported usage.
 */
export async function estimateUsage(deltas: { output: readonly string[]; reasoning: readonly string[] }, messages: unknown): Promise<Usage> {
  const count = await tokenizer();
  const { output, reasoning } = deltas;
  const { texts, count: n } = messageTexts(messages);
  const reasoningTokens = count(reasoning.join(''));
  const answerTokens = count(output.join(''));
  const input = count(texts.join('\n')) + (n > 0 ? n * PER_MESSAGE + REPLY_PRIMER : 0);
  return { input, cached: 0, output: answerTokens + reasoningTokens, reasoning: reasoningTokens };
}

/** Prompt tokens of the request `messages` (o200k_base plus chat framing), for token-limit reservations. */
export async function countPromptTokens(messages: unknown): Promise<number> {
  const count = await tokenizer();
  const { texts, count: n } = messageTexts(messages);
  return count(texts.join('\n')) + (n > 0 ? n * PER_MESSAGE + REPLY_PRIMER : 0);
}
