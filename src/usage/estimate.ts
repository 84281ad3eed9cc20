/**
 * Token counts for a stream that ended without upstream usage (client abort, upstream
 * cut): the gateway counts what it saw with `gpt-tokenizer` (o200k_base, the encoding of
 * OpenAI's current models; other providers' tokenizers differ, so the result is marked
 * estimated). The tokenizer's tables are large, so they are loaded on first use only and
 * nothing here runs on a request that got its usage from the upstream.
 */
import type { Usage } from './usage.js';

/** The tokenizer's count of one text. */
export type CountTokens = (text: string) => number;

let loading: Promise<CountTokens> | null = null;

function tokenizer(): Promise<CountTokens> {
  loading ??= import('gpt-tokenizer/encoding/o200k_base').then((m) => (text: string) => (text ? m.countTokens(text) : 0));
  return loading;
}

/**
 * Characters counted exactly per call; beyond them text is sampled. The tokenizer runs on
 * the main thread at about 0.1-0.8 µs per character (0.1 for prose and code, 0.8 for random
 * text; measured on this repo's 2-core box), so 16 Ki characters cost at most ~13 ms.
 */
const EXACT_CHARS = 16_384;
/** Characters per sample slice, and the total sampled per call beyond the exact budget. */
const SLICE_CHARS = 2_048;
const SAMPLE_CHARS = 16_384;
/** Tokens per character assumed before anything was counted (o200k_base on English prose is ~0.25). */
const FALLBACK_RATIO = 0.3;

/**
 * Tokens in `texts` (joined by newlines) with bounded work: the first EXACT_CHARS characters
 * are counted exactly; a longer text is counted from slices at its start, middle and end,
 * scaled by its length; once the sample budget is spent, the tokens-per-character ratio seen
 * so far is applied to the rest. So a 27 MB prompt costs the same ~30 ms as a 32 KB one
 * (issue 14: it used to block the event loop for 1.5 s). Exact for prompts up to 16 Ki characters.
 */
export function boundedCount(count: CountTokens, texts: readonly string[]): number {
  let exact = EXACT_CHARS;
  let sample = SAMPLE_CHARS;
  let seenChars = 0;
  let seenTokens = 0;
  let total = Math.max(0, texts.length - 1); // the joining newlines
  for (const t of texts) {
    if (t.length <= exact) {
      const n = count(t);
      exact -= t.length;
      seenChars += t.length;
      seenTokens += n;
      total += n;
    } else if (sample >= SLICE_CHARS) {
      const slices = Math.min(3, Math.floor(sample / SLICE_CHARS));
      let chars = 0;
      let tokens = 0;
      for (let i = 0; i < slices; i++) {
        const at = slices === 1 ? 0 : Math.floor(((t.length - SLICE_CHARS) * i) / (slices - 1));
        tokens += count(t.slice(at, at + SLICE_CHARS));
        chars += SLICE_CHARS;
      }
      sample -= chars;
      seenChars += chars;
      seenTokens += tokens;
      total += Math.ceil((tokens / chars) * t.length);
    } else {
      total += Math.ceil((seenChars > 0 ? seenTokens / seenChars : FALLBACK_RATIO) * t.length);
    }
  }
  return total;
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
  const reasoningTokens = boundedCount(count, [reasoning.join('')]);
  const answerTokens = boundedCount(count, [output.join('')]);
  const input = boundedCount(count, texts) + (n > 0 ? n * PER_MESSAGE + REPLY_PRIMER : 0);
  return { input, cached: 0, output: answerTokens + reasoningTokens, reasoning: reasoningTokens };
}

/**
 * Prompt tokens of the request `messages` (o200k_base plus chat framing), for token-limit
 * reservations and count_tokens estimates; bounded work, see {@link boundedCount}.
 */
export async function countPromptTokens(messages: unknown): Promise<number> {
  const count = await tokenizer();
  const { texts, count: n } = messageTexts(messages);
  return boundedCount(count, texts) + (n > 0 ? n * PER_MESSAGE + REPLY_PRIMER : 0);
}
