/**
 * Small readers the translators share: one JSON parse per upstream event or body, and
 * the shapes every wire API's events have in common.
 */
import type { SseEvent } from '../sse/parse.js';
import { unreadable } from './failure.js';
import type { StreamStep } from './types.js';

export type Obj = Record<string, unknown>;

export function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The step of an event that changes nothing and sends nothing. */
export const NOTHING: StreamStep = Object.freeze({});

/**
 * The JSON object of one event's `data`, parsed once: `false` when it is not a JSON object
 * (such a frame never reaches the client: see `badFrame`), null for a blank `data` (a
 * keep-alive, dropped).
 */
export function eventObject(ev: SseEvent): Obj | null | false {
  const data = ev.data!;
  if (data.trim() === '') return null;
  try {
    const parsed: unknown = JSON.parse(data);
    return isObj(parsed) ? parsed : false;
  } catch {
    return false;
  }
}

/** The step for a frame `eventObject` refused. */
export function badFrame(): StreamStep {
  return { error: unreadable() };
}

/**
 * The type of an event of a typed-event stream (OpenAI Responses, Anthropic Messages): the
 * data's `type`, else the `event:` field, else `error` for untyped data carrying a top-level
 * `error` (an object or a message: the mid-stream error shape OpenAI-compatible servers send
 * on every route, OpenRouter's recording `openrouter-chat-stream-midstream-error.sse`), so
 * it fails the stream as an error event instead of being relayed as it came.
 */
export function typeOf(obj: Obj, ev: SseEvent): string | null {
  if (typeof obj['type'] === 'string') return obj['type'];
  if (ev.event !== null) return ev.event;
  return isObj(obj['error']) || typeof obj['error'] === 'string' ? 'error' : null;
}

/**
 * Parses a whole JSON body (2xx answers and error bodies), or undefined when it is not JSON.
 */
export function parseBody(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * The start of a typed-event translator's `event()` (Responses, Messages): a comment passes
 * (also after the end), data after the end is dropped, the data is parsed once (a frame that
 * is not a JSON object fails the stream). Returns the step to give back, or the event's
 * object and type to read further.
 */
export function typedEvent(ev: SseEvent, done: boolean): StreamStep | { readonly obj: Obj; readonly type: string | null } {
  if (ev.data === null) return { frames: [ev.raw] };
  if (done) return NOTHING;
  const obj = eventObject(ev);
  if (obj === null) return NOTHING;
  if (obj === false) return badFrame();
  return { obj, type: typeOf(obj, ev) };
}
