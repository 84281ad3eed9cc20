/**
 * Whether a string is exactly one JSON object (RFC 8259 grammar; whitespace allowed around
 * it), checked without building it. The chat passthrough checks every upstream `data:`
 * frame this way (a frame that is not JSON must never reach the client) and parses only the
 * few frames it must read (usage, errors): at ~0.45 µs against JSON.parse's ~0.8 µs for a
 * typical 230-byte chunk, and no garbage (measured with node 20 on the dev box; see
 * test/unit/json-check.test.ts for the property test against JSON.parse).
 *
 * Written here because the gateway's hot path needs a check that allocates nothing, and no
 * kept library offers a validate-only JSON scan (they parse, or validate against a schema).
 */

/** Deepest nesting accepted; deeper input is reported as not valid (a chat chunk nests ~4 deep). */
export const MAX_JSON_DEPTH = 256;

/** Container kinds on the nesting stack: 1 object, 2 array. Reused: the check is synchronous. */
const stack = new Uint8Array(MAX_JSON_DEPTH);
/** Hex digits and the characters allowed after a backslash, by char code. */
const HEX = new Uint8Array(128);
const ESCAPE = new Uint8Array(128);
for (const ch of '0123456789abcdefABCDEF') HEX[ch.charCodeAt(0)] = 1;
for (const ch of '"\\/bfnrt') ESCAPE[ch.charCodeAt(0)] = 1;

/** Parser states between tokens. */
const VALUE = 0; // a value is expected
const AFTER = 1; // after a value: ',' or the container's closer
const FIRST_KEY = 2; // after '{': a key or '}'
const KEY = 3; // after ',' in an object: a key
const FIRST_ITEM = 4; // after '[': a value or ']'

function isSpace(c: number): boolean {
  return c === 32 || c === 10 || c === 13 || c === 9;
}

/** Index after the closing quote of the string whose content starts at `i`, or -1. */
function stringEnd(s: string, i: number, n: number): number {
  while (i < n) {
    const c = s.charCodeAt(i);
    if (c === 34) return i + 1;
    if (c === 92) {
      const e = s.charCodeAt(i + 1);
      if (e === 117) {
        if (!(HEX[s.charCodeAt(i + 2)] && HEX[s.charCodeAt(i + 3)] && HEX[s.charCodeAt(i + 4)] && HEX[s.charCodeAt(i + 5)])) return -1;
        i += 6;
      } else if (e < 128 && ESCAPE[e]) {
        i += 2;
      } else {
        return -1;
      }
      continue;
    }
    if (c < 32) return -1;
    i++;
  }
  return -1;
}

/** Index after the number starting at `i`, or -1 (`-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?`). */
function numberEnd(s: string, i: number): number {
  let c = s.charCodeAt(i);
  if (c === 45) c = s.charCodeAt(++i);
  if (c === 48) c = s.charCodeAt(++i);
  else if (c >= 49 && c <= 57) {
    do c = s.charCodeAt(++i);
    while (c >= 48 && c <= 57);
  } else return -1;
  if (c === 46) {
    c = s.charCodeAt(++i);
    if (!(c >= 48 && c <= 57)) return -1;
    do c = s.charCodeAt(++i);
    while (c >= 48 && c <= 57);
  }
  if (c === 101 || c === 69) {
    c = s.charCodeAt(++i);
    if (c === 43 || c === 45) c = s.charCodeAt(++i);
    if (!(c >= 48 && c <= 57)) return -1;
    do c = s.charCodeAt(++i);
    while (c >= 48 && c <= 57);
  }
  return i;
}

/** Index after the literal `word` at `i`, or -1. */
function literalEnd(s: string, i: number, word: string): number {
  for (let k = 1; k < word.length; k++) if (s.charCodeAt(i + k) !== word.charCodeAt(k)) return -1;
  return i + word.length;
}

/** True when `s` is one JSON object and nothing else but whitespace. Never throws. */
export function isJsonObjectText(s: string): boolean {
  const n = s.length;
  let i = 0;
  while (i < n && isSpace(s.charCodeAt(i))) i++;
  if (s.charCodeAt(i) !== 123) return false;
  let depth = 0;
  let state = VALUE;
  for (;;) {
    while (i < n && isSpace(s.charCodeAt(i))) i++;
    if (i >= n) return false;
    const c = s.charCodeAt(i);
    if (state === AFTER || (state === FIRST_KEY && c === 125) || (state === FIRST_ITEM && c === 93)) {
      const top = stack[depth - 1];
      if (state === AFTER && c === 44) {
        state = top === 1 ? KEY : VALUE;
        i++;
        continue;
      }
      if (!((c === 125 && top === 1) || (c === 93 && top === 2))) return false;
      i++;
      depth--;
      state = AFTER;
      if (depth === 0) {
        while (i < n && isSpace(s.charCodeAt(i))) i++;
        return i === n;
      }
      continue;
    }
    if (state === FIRST_KEY || state === KEY) {
      if (c !== 34) return false;
      i = stringEnd(s, i + 1, n);
      if (i < 0) return false;
      while (i < n && isSpace(s.charCodeAt(i))) i++;
      if (s.charCodeAt(i) !== 58) return false;
      i++;
      state = VALUE;
      continue;
    }
    // A value (state VALUE, or FIRST_ITEM with something other than ']').
    if (c === 123 || c === 91) {
      if (depth === MAX_JSON_DEPTH) return false;
      stack[depth++] = c === 123 ? 1 : 2;
      state = c === 123 ? FIRST_KEY : FIRST_ITEM;
      i++;
      continue;
    }
    if (c === 34) i = stringEnd(s, i + 1, n);
    else if (c === 116) i = literalEnd(s, i, 'true');
    else if (c === 102) i = literalEnd(s, i, 'false');
    else if (c === 110) i = literalEnd(s, i, 'null');
    else i = numberEnd(s, i);
    if (i < 0) return false;
    state = AFTER;
  }
}
