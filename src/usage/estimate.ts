/**
 * Token counts the gateway makes itself with `gpt-tokenizer` (o200k_base, the encoding of
 * OpenAI's current models; other providers' tokenizers differ, so results are marked
 * estimated): a prompt's input tokens for `tpm` reservations and count_tokens, and the usage
 * of an answer that came without any (client abort, upstream cut). What a prompt holds is
 * read by usage/prompt-parts.ts. The tokenizer's tables are large, so they are loaded on
 * first use only.
 */
import { promptParts, type Prompt } from './prompt-parts.js';
import type { Usage } from './usage.js';
import { slicePause } from '../util/json-walk.js';

export { EMPTY_PROMPT, type Prompt } from './prompt-parts.js';

/** The tokenizer's count of one text. */
export type CountTokens = (text: string) => number;

let loading: Promise<CountTokens> | null = null;

function tokenizer(): Promise<CountTokens> {
  loading ??= import('gpt-tokenizer/encoding/o200k_base').then((m) => (text: string) => (text ? m.countTokens(text) : 0));
  return loading;
}

/**
 * Loads the tokenizer now and warms it with one short count, for a gateway that will count
 * prompts from its first request (a key with `tpm`): loading its tables holds the event loop
 * ~250-450 ms and takes ~76 MB (measured on the 2-core box), better paid at start, before the
 * port opens, than by the first requests and every /healthz behind them
 * (`npm run bench:big-prompts`).
 */
export async function loadTokenizer(): Promise<void> {
  (await tokenizer())('warm the tokenizer up: alpha3 beta17 gamma42 {"k": [1, 2]}');
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
  const steps = countSteps(count, texts);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * {@link boundedCount}, giving the event loop a turn whenever its work passed util/json-walk.ts SLICE_MS: its
 * ~30 ms (more while the tokenizer is still cold) come in slices of one tokenizer call each.
 */
export async function boundedCountYielding(count: CountTokens, texts: readonly string[]): Promise<number> {
  const steps = countSteps(count, texts);
  const pause = slicePause();
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    await pause();
  }
}

/** {@link boundedCount}'s walk, pausing (yield) after each tokenizer call; returns the count. */
function* countSteps(count: CountTokens, texts: readonly string[]): Generator<void, number> {
  let exact = EXACT_CHARS;
  let sample = SAMPLE_CHARS;
  let seenChars = 0;
  let seenTokens = 0;
  let total = Math.max(0, texts.length - 1); // the joining newlines
  for (const t of texts) {
    if (t.length <= exact || (t.length <= SLICE_CHARS && t.length <= sample)) {
      // Exact while the exact budget lasts; then a short text is counted whole from the sample budget.
      const n = count(t);
      yield;
      if (t.length <= exact) exact -= t.length;
      else sample -= t.length;
      seenChars += t.length;
      seenTokens += n;
      total += n;
    } else if (t.length > SLICE_CHARS && sample >= SLICE_CHARS) {
      const slices = Math.min(3, Math.floor(sample / SLICE_CHARS));
      let chars = 0;
      let tokens = 0;
      for (let i = 0; i < slices; i++) {
        const at = slices === 1 ? 0 : Math.floor(((t.length - SLICE_CHARS) * i) / (slices - 1));
        tokens += count(t.slice(at, at + SLICE_CHARS));
        chars += SLICE_CHARS;
        yield;
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

/** The chat framing of `turns` messages. */
const framing = (turns: number): number => (turns > 0 ? turns * PER_MESSAGE + REPLY_PRIMER : 0);

/** Input tokens of a prompt: its texts through the tokenizer (bounded work), its images and files at their fixed estimates, and the chat framing. */
async function promptTokens(count: CountTokens, prompt: Prompt): Promise<number> {
  const parts = await promptParts(prompt);
  return (await boundedCountYielding(count, parts.texts)) + parts.fixedTokens + framing(parts.turns);
}

/**
 * Counts usage from the text of the delta events seen (output and reasoning, extracted by
 * the API's `deltaTexts`) and the request's prompt (input; {@link EMPTY_PROMPT} when the
 * upstream reported it). `reasoning` is a part of `output`, as in upstream-reported usage.
 */
export async function estimateUsage(deltas: { output: readonly string[]; reasoning: readonly string[] }, prompt: Prompt): Promise<Usage> {
  const count = await tokenizer();
  const { output, reasoning } = deltas;
  const reasoningTokens = await boundedCountYielding(count, [reasoning.join('')]);
  const answerTokens = await boundedCountYielding(count, [output.join('')]);
  const input = await promptTokens(count, prompt);
  return { input, cached: 0, output: answerTokens + reasoningTokens, reasoning: reasoningTokens };
}

/**
 * Input tokens of a request's prompt (o200k_base on its texts, fixed estimates for images and
 * files: usage/prompt-parts.ts, plus chat framing), for `tpm` reservations and count_tokens
 * estimates; bounded work ({@link boundedCount}), and the walk yields to the event loop.
 */
export async function countPromptTokens(prompt: Prompt): Promise<number> {
  return promptTokens(await tokenizer(), prompt);
}
