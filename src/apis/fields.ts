/** Small readers of client bodies and upstream events shared by the inbound APIs. */
import type { SseEvent } from '../sse/parse.js';

/** A non-empty string, else undefined. */
export const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** A finite number, else undefined. */
export const int = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

const TYPE = /^\s*\{\s*"type"\s*:\s*"([^"]+)"/;

/**
 * The type of an event of a typed-event stream (OpenAI Responses, Anthropic Messages): its
 * `event:` field, else the `"type"` that opens its JSON data (read without parsing).
 */
export function eventType(ev: SseEvent): string | null {
  if (ev.event) return ev.event;
  return ev.data ? (TYPE.exec(ev.data)?.[1] ?? null) : null;
}
