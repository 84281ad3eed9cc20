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
  return text
    .split(/(?<=\n\n)/)
    .filter((e) => e.trim() !== '');
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
