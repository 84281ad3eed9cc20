/**
 * Test access to the recorded provider responses in test/fixtures (copied from
 * ../shared/fixtures; see its README for each capture's source).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ReceivedRequest, ScriptedReply, Step } from './fake-upstream.js';

const here = dirname(fileURLToPath(import.meta.url));
/** test/fixtures, from the compiled `.test-build/test/helpers`. */
export const FIXTURES = join(here, '..', '..', '..', 'test', 'fixtures');

export function fixture(name: string): Buffer {
  return readFileSync(join(FIXTURES, name));
}

export function fixtureJson(name: string): Record<string, unknown> {
  return JSON.parse(fixture(name).toString('utf8')) as Record<string, unknown>;
}

/** Splits a recorded `.sse` body into its events (each with its blank-line terminator). */
export function sseEvents(name: string): string[] {
  const text = fixture(name).toString('utf8');
  return text.split(/(?<=\n\n)/).filter((e) => e.trim() !== '');
}

/** True for the `choices: []` usage chunk OpenAI sends only with include_usage. */
export function isUsageOnly(event: string): boolean {
  const m = /^data: (\{.*\})\s*$/s.exec(event);
  if (!m) return false;
  const chunk = JSON.parse(m[1]!) as { choices?: unknown[]; usage?: unknown };
  return Array.isArray(chunk.choices) && chunk.choices.length === 0 && !!chunk.usage;
}

/**
 * A reply that replays a recording like the provider would: the usage-only chunk only when
 * the request asked for `stream_options.include_usage`.
 */
export function replay(name: string, opts: { delayMs?: number } = {}): (req: ReceivedRequest) => ScriptedReply {
  const events = sseEvents(name);
  return (req) => {
    const wants = (req.json?.['stream_options'] as { include_usage?: boolean } | undefined)?.include_usage === true;
    const steps: Step[] = [];
    for (const e of events) {
      if (!wants && isUsageOnly(e)) continue;
      if (opts.delayMs) steps.push({ delayMs: opts.delayMs });
      steps.push(e);
    }
    return { status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8' }, steps };
  };
}

/**
 * The events of an Anthropic Messages stream recording, framed as Anthropic sends them
 * (`event: <type>\ndata: <json>\n\n`): `.sse` files are split as recorded; `.chunks.jsonl`
 * files hold one data payload per line (the recorder stripped the framing), re-framed with
 * the payload's own `type`.
 */
export function anthropicEvents(name: string): string[] {
  if (name.endsWith('.sse')) return sseEvents(name);
  return fixture(name)
    .toString('utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((line) => `event: ${(JSON.parse(line) as { type: string }).type}\ndata: ${line}\n\n`);
}

/** The data payloads of an Anthropic stream recording, parsed. */
export function anthropicPayloads(name: string): Record<string, unknown>[] {
  return anthropicEvents(name).map((e) => {
    const data = e
      .split('\n')
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).trim())
      .join('\n');
    return JSON.parse(data) as Record<string, unknown>;
  });
}

/** A reply replaying an Anthropic stream recording. */
export function replayAnthropic(name: string, opts: { delayMs?: number } = {}): () => ScriptedReply {
  const events = anthropicEvents(name);
  return () => {
    const steps: Step[] = [];
    for (const e of events) {
      if (opts.delayMs) steps.push({ delayMs: opts.delayMs });
      steps.push(e);
    }
    return { status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8' }, steps };
  };
}
