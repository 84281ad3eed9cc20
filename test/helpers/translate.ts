/**
 * Drives a translator the way the pipeline's SSE relay does (one framer, each event once,
 * the translator's end verdict, the client API's error frame on a failure), without a
 * network: for translator unit tests.
 */
import type { ApiName } from '../../src/apis/names.js';
import { APIS } from '../../src/apis/index.js';
import { GeneratedText } from '../../src/pipeline/generated-text.js';
import { SseFramer, terminated } from '../../src/sse/parse.js';
import { translator } from '../../src/translate/table.js';
import type { StreamStep, Translator, TranslatorContext } from '../../src/translate/types.js';
import type { Usage } from '../../src/usage/usage.js';

export interface Driven {
  /** Everything the client would receive. */
  readonly text: string;
  /** The last usage the translator reported. */
  readonly usage: Usage | null;
  /** The failure that ended the stream, if one did. */
  readonly error: StreamStep['error'] | null;
  /** Generated text and reasoning the translator reported (for estimates). */
  readonly generated: string;
  readonly reasoning: string;
}

/**
 * A translator for `client` over `wire` with test defaults: no prompt-cache breakpoints
 * (`cacheBreakpoints: 'off'`), so a test sees the translation alone; the breakpoints have
 * their own tests (messages-cache.test.ts, cache-breakpoints.test.ts).
 */
export function makeTranslator(client: ApiName, wire: ApiName, ctx: Partial<TranslatorContext> = {}): Translator {
  return translator(client, wire, { stream: true, wantsUsage: true, secrets: [], retryAfterCapMs: 60_000, options: {}, cacheBreakpoints: 'off', ...ctx });
}

/** Feeds `pieces` (any split of an SSE body) through `tr` as the relay would. */
export function drive(tr: Translator, pieces: readonly Buffer[]): Driven {
  const framer = new SseFramer();
  const out: Buffer[] = [];
  let usage: Usage | null = null;
  let error: StreamStep['error'] | null = null;
  const seen = new GeneratedText(tr);
  const take = (step: StreamStep): boolean => {
    if (step.usage) usage = step.usage;
    seen.add(step);
    for (const f of step.frames ?? []) out.push(f);
    if (step.error) {
      error = step.error;
      out.push(APIS[tr.client].sseErrorFrame(step.error.error));
      return true;
    }
    return false;
  };
  let stopped = false;
  for (const p of pieces) {
    for (const ev of framer.push(Buffer.from(p))) {
      if (take(tr.event(ev))) {
        stopped = true;
        break;
      }
    }
    if (stopped) break;
  }
  if (!stopped) {
    const flushed = framer.end();
    const tail = flushed && terminated(flushed);
    if (!(tail && take(tr.event(tail)))) take(tr.end());
  }
  // What the relay reads when it needs an estimate: the text of the skipped events.
  seen.readDeferred();
  return { text: Buffer.concat(out).toString('utf8'), usage, error, generated: seen.text.join(''), reasoning: seen.reasoning.join('') };
}

/**
 * Ids a translator mints for the client (a response and its items, an Anthropic message or
 * tool call made from a chat answer) are random by design: each distinct one becomes
 * `<prefix>#k` in order of appearance, so the output of two translators can be compared.
 */
export function sameIds(text: string): string {
  const seen = new Map<string, string>();
  return text.replace(/\b(resp|msg|rs|fc|ctc|call|toolu)_(?:01)?[0-9A-Za-z]{22,48}\b/g, (id, prefix: string) => {
    if (!seen.has(id)) seen.set(id, `${prefix}#${seen.size}`);
    return seen.get(id)!;
  });
}
