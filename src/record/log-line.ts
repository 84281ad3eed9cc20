/**
 * The `request finished` log line: one JSON line per finished request (docs/observability.md
 * lists its fields). It is built here as one string and handed to the logger's destination,
 * byte for byte the line pino would write for the same fields (level, time, the logger's
 * bindings, the fields in order, msg), instead of through `logger.info(object)`; one
 * exception: a lone surrogate in a string over 100 characters, which pino escapes, is written
 * as U+FFFD, as pino writes it in a shorter one (test/unit/log-line.test.ts compares them).
 *
 * Why our own: at saturation pino's generic path (an object literal per line, its key walk,
 * the redaction pass over it, the serialised pieces) allocated ~9 KB per request, the largest
 * single share of the gateway's 83 KB (`npm run bench:alloc`, 856f097), and the line cost
 * 15–20 % of req/s (docs/performance.md, "what the request log line costs"). This line's
 * fields are ours and fixed; none of the gateway's redaction paths matches them (the key is
 * logged by name, the upstream by id). Any other logger (one an embedder passes to buildApp,
 * a test double, `logger: false`) gets the same fields through `info(object)`.
 */
import { pino } from 'pino';
import type { Usage } from '../usage/usage.js';
import type { RequestRecord } from './request.js';

/** Where pino keeps the parts of a line (pino.symbols: pino's exported "advanced" API, pino ≥ 7; lib/proto.js write, lib/tools.js asJson). */
const S = pino.symbols;
/** Set by a child's `msgPrefix` (pino ≥ 8.14); exported at run time, not in pino's types. */
const msgPrefixSym = (pino.symbols as unknown as Record<string, symbol>)['msgPrefixSym'] ?? Symbol('none');

/** The logger this module writes to: Fastify's request logger (a pino child), or any logger with `info(object, msg)`. */
export interface LineLogger {
  info(obj: object, msg: string): void;
}

/** Set by `allowRecordLines` on a logger (its children inherit it): the stringifiers (pino's redaction) it had then. */
const LINE_SAFE = Symbol('switchyard.recordLinesSafe');

interface Marked {
  readonly stringifiers: unknown;
}

/** Every key of the line (members, then `msg`; test/unit/log-line.test.ts checks it against a line with every field). */
export const LINE_KEYS = [
  'api',
  'key',
  'model',
  'requested_model',
  'upstream',
  'upstream_model',
  'stream',
  'status',
  'outcome',
  'error_class',
  'attempts',
  'duration_ms',
  'ttft_ms',
  'tokens',
  'tokens_estimated',
  'cost_usd',
  'shed',
  'fallback',
  'cache',
  'tags',
  'transport',
  'msg',
];

/** Whether a logger's serializers (pino's serializersSym) leave every key of the line alone, per serializers object. */
const serializersChecked = new WeakMap<object, boolean>();

function noSerializerFor(serializers: unknown): boolean {
  if (serializers === undefined || serializers === null || typeof serializers !== 'object') return serializers === undefined;
  let ok = serializersChecked.get(serializers);
  if (ok === undefined) {
    ok = !LINE_KEYS.some((k) => (serializers as Record<string, unknown>)[k] !== undefined);
    serializersChecked.set(serializers, ok);
  }
  return ok;
}

/**
 * Lets `logRecord` write its line straight to `logger`'s destination: only for a logger whose
 * options cannot change the line's fields (the gateway's own, server/logger.ts: its redaction
 * paths match none of them). A child that brings its own redaction or a serializer for one of
 * the line's keys (Fastify's request child adds `req`, `res` and `err` ones: no matter), or any
 * other logger, gets the line through `info(object)`, with its options applied.
 */
export function allowRecordLines(logger: object): void {
  const p = logger as PinoParts & { [LINE_SAFE]?: Marked };
  p[LINE_SAFE] = { stringifiers: p[S.stringifiersSym] };
}

/** What a pino logger holds under those symbols; absent on any other logger. */
interface PinoParts {
  readonly [LINE_SAFE]?: Marked;
  readonly [S.serializersSym]?: unknown;
  readonly [S.stringifiersSym]?: unknown;
  readonly [S.lsCacheSym]?: Record<number, string>;
  readonly [S.timeSym]?: () => string;
  readonly [S.chindingsSym]?: string;
  readonly [S.endSym]?: string;
  readonly [S.streamSym]?: { write(line: string): unknown; readonly [S.needsMetadataGsym]?: boolean };
  readonly [S.mixinSym]?: unknown;
  readonly [S.formattersSym]?: { readonly log?: unknown };
  readonly [S.hooksSym]?: { readonly streamWrite?: unknown; readonly logMethod?: unknown };
  readonly [S.messageKeySym]?: string;
  readonly [S.nestedKeySym]?: string | null;
  readonly [msgPrefixSym]?: string;
  readonly levels?: { readonly values: Readonly<Record<string, number>> };
  isLevelEnabled?(level: string): boolean;
}

/**
 * The prefix (level, time, bindings), end and stream of a pino logger whose lines this module
 * can write as pino would: allowed (allowRecordLines), with the redaction it had then and no
 * serializer for a key of the line; no mixin, log formatter, stream or log-method hook,
 * nested key, message prefix or multistream metadata; messages under `msg`. Null otherwise.
 */
function pinoParts(p: PinoParts, level: number): { head: string; end: string; stream: { write(line: string): unknown } } | null {
  const stream = p[S.streamSym];
  const ls = p[S.lsCacheSym]?.[level];
  const time = p[S.timeSym];
  const bindings = p[S.chindingsSym];
  const end = p[S.endSym];
  if (!stream || typeof stream.write !== 'function' || stream[S.needsMetadataGsym] === true) return null;
  if (typeof ls !== 'string' || typeof time !== 'function' || typeof bindings !== 'string' || typeof end !== 'string') return null;
  const safe = p[LINE_SAFE];
  if (!safe || safe.stringifiers !== p[S.stringifiersSym] || !noSerializerFor(p[S.serializersSym])) return null;
  if (p[S.mixinSym] || p[S.formattersSym]?.log || p[S.hooksSym]?.streamWrite || p[S.hooksSym]?.logMethod || p[S.nestedKeySym] || p[msgPrefixSym]) return null;
  if (p[S.messageKeySym] !== 'msg') return null;
  return { head: ls + time() + bindings, end, stream };
}

/** The line's token counts as JSON; `cache_write` only when the provider wrote to its prompt cache, `cache_write_1h` (the 1-hour part) only when it has one. */
function tokensJson(u: Usage): string {
  let s = `{"input":${num(u.input)},"cached":${num(u.cached)},"output":${num(u.output)},"reasoning":${num(u.reasoning)}`;
  if (u.cacheWrite) s += `,"cache_write":${num(u.cacheWrite)}`;
  if (u.cacheWrite1h) s += `,"cache_write_1h":${num(u.cacheWrite1h)}`;
  return s + '}';
}

/** A number as JSON writes it (non-finite: null, as pino and JSON.stringify do). */
function num(n: number): string {
  return Number.isFinite(n) ? String(n) : 'null';
}

/** String.prototype.isWellFormed / toWellFormed (ES2024; in Node ≥ 20, V8 11.3): not in the ES2023 lib this project compiles against. */
interface WellFormed {
  isWellFormed(): boolean;
  toWellFormed(): string;
}

/**
 * A string or null as JSON. A lone UTF-16 surrogate (a client can put one in `model`) is
 * written as U+FFFD, as pino's own escaping of short strings ends up writing it, rather than
 * as JSON.stringify's `\ud800` escape, which jq and other strict readers refuse.
 */
function str(s: string | null): string {
  if (s === null) return 'null';
  const w = s as unknown as WellFormed;
  return JSON.stringify(w.isWellFormed() ? s : w.toWellFormed());
}

/** The fields of the line after the logger's bindings, as JSON members each led by a comma. */
function members(rec: RequestRecord): string {
  let s =
    `,"api":${str(rec.api)},"key":${str(rec.key)},"model":${str(rec.model)},"requested_model":${str(rec.requestedModel)}` +
    `,"upstream":${str(rec.upstream)},"upstream_model":${str(rec.upstreamModel)},"stream":${rec.stream},"status":${num(rec.status)}` +
    `,"outcome":${str(rec.outcome)},"error_class":${str(rec.errorClass)},"attempts":${num(rec.attempts)},"duration_ms":${num(rec.durationMs)}` +
    `,"ttft_ms":${rec.ttftMs === null ? 'null' : num(rec.ttftMs)},"tokens":${tokensJson(rec.usage)},"tokens_estimated":${rec.usageEstimated}` +
    `,"cost_usd":${num(rec.costUsd)}`;
  // Only when the burst shedder or a fallback acted: which calls were shed, and how.
  if (rec.shed !== null) s += `,"shed":${str(rec.shed)}`;
  if (rec.fallback !== null) s += `,"fallback":${str(rec.fallback)}`;
  if (rec.cache) s += `,"cache":${str(rec.cache)}`;
  for (const _ in rec.tags) {
    s += `,"tags":${JSON.stringify(rec.tags)}`;
    break;
  }
  if (rec.transport === 'websocket') s += ',"transport":"websocket"';
  return s;
}

/** The same fields as an object, for a logger that is not pino's. */
function fields(rec: RequestRecord): Record<string, unknown> {
  return JSON.parse(`{${members(rec).slice(1)}}`) as Record<string, unknown>;
}

/**
 * Writes `rec`'s `request finished` line at level info on `log` (Fastify's request logger,
 * a pino child carrying `request_id`). Nothing when info is off.
 */
export function logRecord(log: LineLogger, rec: RequestRecord): void {
  const p = log as LineLogger & PinoParts;
  if (p.isLevelEnabled && !p.isLevelEnabled('info')) return;
  const level = p.levels?.values['info'];
  const parts = level !== undefined ? pinoParts(p, level) : null;
  if (parts) parts.stream.write(`${parts.head}${members(rec)},"msg":"request finished"${parts.end}`);
  else log.info(fields(rec), 'request finished');
}
