/**
 * `JSON.parse` for a big request body, spread over turns of the event loop.
 *
 * One `JSON.parse` of an agent's 24 MB history holds the loop ~100 ms (two such prompts at once
 * held /healthz 152–165 ms, `npm run bench:big-prompts`). A worker thread does not help: handing
 * the parsed object back is a structured-clone deserialisation of the same size, on the main
 * thread, in one turn. What helps is to parse in pieces: a request body is an object whose
 * bulk sits in a few top-level arrays (`messages`, `input`, `tools`, `system`, `contents`), so
 * this module walks the top level itself, hands each top-level value — and each element of a
 * top-level array — to `JSON.parse` on its own, and yields to the loop whenever a slice of work
 * passes {@link SLICE_MS}. The longest turn is then one element (one message of a history),
 * not the whole body.
 *
 * The walk is a scanner, not a parser: it finds where a value ends (strings skipped with
 * `indexOf`, brackets counted) and leaves the checking to `JSON.parse` on that span, so the
 * result is what `JSON.parse` gives for the whole text — same values, same key order, the last
 * of duplicate keys — and any text `JSON.parse` refuses is refused (a `SyntaxError`); the
 * property test in test/unit/json-pieces.test.ts holds it to that. Written here rather than
 * taken from a streaming-JSON library because those parse in JavaScript character by
 * character (several times slower than V8's `JSON.parse` in total) and build the same objects;
 * this keeps V8's parser and only cuts the text.
 */

import { SLICE_MS, slicePause } from '../../util/json-walk.js';

const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const BACKSLASH = 0x5c;

const bad = (at: number): SyntaxError => new SyntaxError(`Unexpected token in JSON at position ${at}`);

/** The index after JSON whitespace from `i` (RFC 8259 §2: space, tab, LF, CR). */
function skipWs(t: string, i: number): number {
  for (;;) {
    const c = t.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i++;
  }
}

/** The index after the string opening at `i` (a quote), or -1 when it never closes. */
function stringEnd(t: string, i: number): number {
  let from = i + 1;
  for (;;) {
    const q = t.indexOf('"', from);
    if (q < 0) return -1;
    let k = q - 1;
    while (t.charCodeAt(k) === BACKSLASH) k--;
    if ((q - 1 - k) % 2 === 0) return q + 1; // an even run of backslashes: the quote is not escaped
    from = q + 1;
  }
}

/** The index after the value starting at `i`, or -1 when there is none; the span's JSON is not checked here. */
function valueEnd(t: string, i: number): number {
  const c = t.charCodeAt(i);
  if (c === QUOTE) return stringEnd(t, i);
  if (c === OPEN_BRACE || c === OPEN_BRACKET) {
    let depth = 0;
    for (let j = i; j < t.length; j++) {
      const d = t.charCodeAt(j);
      if (d === QUOTE) {
        j = stringEnd(t, j) - 1;
        if (j < 0) return -1;
      } else if (d === OPEN_BRACE || d === OPEN_BRACKET) depth++;
      else if (d === CLOSE_BRACE || d === CLOSE_BRACKET) {
        if (--depth === 0) return j + 1;
      }
    }
    return -1;
  }
  let j = i;
  for (; j < t.length; j++) {
    const d = t.charCodeAt(j);
    if (d === COMMA || d === CLOSE_BRACE || d === CLOSE_BRACKET || d === 0x20 || d === 0x0a || d === 0x0d || d === 0x09) break;
  }
  return j > i ? j : -1;
}

/** Parses the one value starting at `i`: [value, index after it]. @throws SyntaxError */
function parseValueAt(t: string, i: number, each: (v: unknown) => void): number {
  const end = valueEnd(t, i);
  if (end < 0) throw bad(i);
  const v: unknown = JSON.parse(t.slice(i, end));
  each(v);
  return end;
}

/** Sets `key` as `JSON.parse` does (an own data property, even `__proto__`; a repeated key keeps its place and takes the last value). */
function define(out: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(out, key, { value, writable: true, enumerable: true, configurable: true });
}

/**
 * Parses `text` as `JSON.parse(text)` would, over as many event-loop turns as it takes to keep
 * each under about {@link SLICE_MS} plus one element's parse. `onPiece` sees each value parsed
 * on its own (a top-level value that is not an array, or an element of a top-level array), e.g.
 * to run a poisoning scan piece by piece; the top-level object itself is the caller's to check.
 * @returns the parsed value; a text whose top level is not an object is parsed in one piece.
 * @throws SyntaxError where `JSON.parse` would throw (the message and position may differ).
 */
export async function parseJsonInPieces(text: string, onPiece: (piece: unknown) => void = () => undefined): Promise<unknown> {
  const t = text;
  let i = skipWs(t, 0);
  if (t.charCodeAt(i) !== OPEN_BRACE) return JSON.parse(t);
  const pause = slicePause(SLICE_MS);
  const out: Record<string, unknown> = {};
  i = skipWs(t, i + 1);
  if (t.charCodeAt(i) === CLOSE_BRACE) i++;
  else {
    for (;;) {
      if (t.charCodeAt(i) !== QUOTE) throw bad(i);
      const keyEnd = stringEnd(t, i);
      if (keyEnd < 0) throw bad(i);
      const key = JSON.parse(t.slice(i, keyEnd)) as string;
      i = skipWs(t, keyEnd);
      if (t.charCodeAt(i) !== COLON) throw bad(i);
      i = skipWs(t, i + 1);
      if (t.charCodeAt(i) === OPEN_BRACKET) {
        const items: unknown[] = [];
        i = skipWs(t, i + 1);
        if (t.charCodeAt(i) === CLOSE_BRACKET) i++;
        else {
          for (;;) {
            i = skipWs(
              t,
              parseValueAt(t, i, (v) => (items.push(v), onPiece(v))),
            );
            await pause();
            const c = t.charCodeAt(i);
            if (c === CLOSE_BRACKET) break;
            if (c !== COMMA) throw bad(i);
            i = skipWs(t, i + 1);
          }
          i++;
        }
        define(out, key, items);
      } else {
        i = parseValueAt(t, i, (v) => (define(out, key, v), onPiece(v)));
        await pause();
      }
      i = skipWs(t, i);
      const c = t.charCodeAt(i);
      if (c === CLOSE_BRACE) {
        i++;
        break;
      }
      if (c !== COMMA) throw bad(i);
      i = skipWs(t, i + 1);
    }
  }
  if (skipWs(t, i) !== t.length) throw bad(i);
  return out;
}
