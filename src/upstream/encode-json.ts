/**
 * A request body written out as JSON bytes without holding the event loop long.
 *
 * Writing a 24 MB prompt with one `JSON.stringify` and one UTF-8 encoding is two passes of
 * ~30–50 ms each on one core; two such prompts back to back held /healthz and every other
 * request ~250 ms (`npm run bench:big-prompts`, docs/reliability.md). A big body is instead
 * written piece by piece (each member of the top-level object, and each element of a big
 * array in it, such as `messages` or `input`), each piece encoded to UTF-8 at once, with a
 * turn of the event loop whenever {@link SLICE_MS} of work went by, then the bytes joined in
 * one copy. The output is byte for byte what `JSON.stringify` gives (same member order,
 * `undefined` members left out and `undefined` array elements written `null`, `toJSON`
 * honoured), so the upstream cannot tell.
 *
 * Written here rather than with a streaming-JSON library: what is needed is only a split
 * at the two top levels with `JSON.stringify` doing the rest, which keeps its speed.
 */
import { nextTurn, SLICE_MS, slicePause } from '../util/json-walk.js';

/** From about this many bytes of JSON (by {@link longerThan}) a body is written in pieces. */
export const BIG_JSON_BYTES = 1 << 20;

/** Characters gathered before they are encoded into one buffer. */
const FLUSH_CHARS = 64 * 1024;

type Json = Record<string, unknown> | unknown[];

/** Whether `v` is a container written member by member here (a plain array or object with no `toJSON`). */
function container(v: unknown): v is Json {
  if (v === null || typeof v !== 'object') return false;
  if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return Array.isArray(v) || proto === Object.prototype || proto === null;
}

/**
 * Writes JSON pieces as UTF-8 buffers of about {@link FLUSH_CHARS} characters (few buffers:
 * one per key of a 24 MB body kept the GC busy), yielding to the event loop every SLICE_MS.
 */
class Writer {
  private readonly parts: Buffer[] = [];
  private pending = '';
  private size = 0;

  push(text: string): void {
    this.pending += text;
    if (this.pending.length >= FLUSH_CHARS) this.flush();
  }

  private flush(): void {
    if (this.pending === '') return;
    const b = Buffer.from(this.pending, 'utf8');
    this.parts.push(b);
    this.size += b.length;
    this.pending = '';
  }

  /** The bytes written, copied into one buffer a slice of time at a time (one `Buffer.concat` of 24 MB is a long turn on a busy box). */
  async bytes(): Promise<Buffer> {
    this.flush();
    const out = Buffer.allocUnsafeSlow(this.size);
    let at = 0;
    for (const part of this.parts) {
      at += part.copy(out, at);
      await this.pause();
    }
    return out;
  }

  readonly pause = slicePause(SLICE_MS);

  /** Writes `v` (a container) member by member, descending `depth` more levels. */
  async container(v: Json, depth: number): Promise<void> {
    const array = Array.isArray(v);
    this.push(array ? '[' : '{');
    let first = true;
    for (const key of array ? v.keys() : Object.keys(v)) {
      const item = (v as Record<string | number, unknown>)[key];
      const whole = depth > 0 && container(item) ? null : JSON.stringify(item);
      // What JSON.stringify leaves out of an object (undefined, functions, symbols, a toJSON
      // giving undefined) it writes as null in an array.
      if (whole === undefined && !array) continue;
      this.push(`${first ? '' : ','}${array ? '' : `${JSON.stringify(key)}:`}`);
      first = false;
      if (whole === null) await this.container(item as Json, depth - 1);
      else this.push(whole ?? 'null');
      await this.pause();
    }
    this.push(array ? ']' : '}');
  }
}

/**
 * Whether `value`'s strings and keys add up to more than `chars` characters (a lower bound
 * of its JSON's length), found by a walk that stops as soon as they do: a few µs for a
 * usual body, never recursing (a body nested 100,000 deep is walked in a loop).
 */
export function longerThan(value: unknown, chars: number): boolean {
  const todo: unknown[] = [value];
  let n = 0;
  while (todo.length > 0) {
    const v = todo.pop();
    if (typeof v === 'string') n += v.length;
    else if (v !== null && typeof v === 'object') {
      if (Array.isArray(v)) for (const x of v) todo.push(x);
      else
        for (const k of Object.keys(v)) {
          n += k.length;
          todo.push((v as Record<string, unknown>)[k]);
        }
    }
    if (n > chars) return true;
  }
  return false;
}

/**
 * `value` as JSON: a string at once when small (the send starts in the same turn, as it did
 * before this module), else a promise of its UTF-8 bytes, written over several turns of the
 * event loop (see the module comment).
 * @throws what JSON.stringify throws (a body nested too deep: RangeError), before anything is sent.
 */
export function encodeJson(value: unknown): string | Promise<Buffer> {
  if (!container(value) || !longerThan(value, BIG_JSON_BYTES)) return JSON.stringify(value);
  return encodeJsonPieces(value);
}

/**
 * `value` as JSON's UTF-8 bytes, written in pieces whatever its size (what {@link encodeJson}
 * does for a big body).
 * @throws what JSON.stringify throws.
 */
export async function encodeJsonPieces(value: unknown): Promise<Buffer> {
  if (!container(value)) return Buffer.from(JSON.stringify(value) ?? 'null', 'utf8');
  const w = new Writer();
  await w.container(value, 2);
  await nextTurn();
  return w.bytes();
}
