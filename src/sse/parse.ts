/**
 * Incremental Server-Sent Events framer that keeps each event's raw bytes.
 *
 * Follows the WHATWG HTML "event stream" grammar: lines end in CRLF, LF or CR; a blank
 * line ends an event; `data:` with or without one space; lines starting with `:` are
 * comments. Written here instead of using `eventsource-parser` because the relay must
 * forward every event byte-for-byte (framing, comments, `[DONE]`) without re-serialising,
 * and that library hands out decoded strings only. Works on bytes, so a multi-byte UTF-8
 * character split across reads is decoded only once its line is complete.
 */

export interface SseEvent {
  /** The event's bytes as received, including its terminating blank line. */
  readonly raw: Buffer;
  /** `data` lines joined with `\n`, or null when the block had none (comments only). */
  readonly data: string | null;
  /** The `event:` field, or null. */
  readonly event: string | null;
}

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;

/** The largest SSE event an upstream may send, bytes (its lines and framing): past it the stream is refused. */
export const MAX_EVENT_BYTES = 32 * 1024 * 1024;

/** An upstream event larger than the framer takes: the relay ends the attempt (an upstream fault). */
export class EventTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`the upstream sent an SSE event larger than ${limit} bytes`);
    this.name = 'EventTooLarge';
  }
}

export class SseFramer {
  /** Bytes of the waiting reads (`waiting`). */
  private waitingBytes = 0;
  /** An event past the limit came whole within one read: the next `push` or `end` throws. */
  private tooLarge = false;
  /** @param maxEventBytes the largest event taken (default MAX_EVENT_BYTES); larger ones throw EventTooLarge from `push`. */
  constructor(private readonly maxEventBytes = MAX_EVENT_BYTES) {}

  private buf: Buffer = Buffer.alloc(0);
  /** Where the current (incomplete) event starts in `buf`. */
  private eventStart = 0;
  /** Where scanning for the next line resumes. */
  private lineStart = 0;
  /** Reads with no line end, not yet joined to `buf` (see `push`). */
  private waiting: Buffer[] = [];
  /** The event's data lines so far: the first alone (the common case, no array), the rest joined with `\n`. */
  private data: string | null = null;
  private event: string | null = null;

  /**
   * Feeds bytes; returns the events completed by them, in order.
   * @param chunk any slice of the stream, split anywhere.
   */
  push(chunk: Buffer): SseEvent[] {
    if (this.tooLarge) throw new EventTooLarge(this.maxEventBytes);
    // A read with no line end, after a buffer not waiting on a CR, ends no line: it is kept
    // aside and joined with the others once a line end comes, so a long line arriving in many
    // reads is copied once, not once per read (which is quadratic in the line's length).
    if (chunk.indexOf(LF) === -1 && chunk.indexOf(CR) === -1 && this.buf[this.buf.length - 1] !== CR) {
      if (chunk.length > 0) this.waiting.push(chunk);
      this.waitingBytes += chunk.length;
      this.checkSize();
      return [];
    }
    if (this.waiting.length > 0) {
      this.waiting.push(chunk);
      chunk = Buffer.concat(this.waiting);
      this.waiting = [];
      this.waitingBytes = 0;
    }
    if (this.eventStart === this.buf.length) {
      this.lineStart -= this.eventStart;
      this.eventStart = 0;
      this.buf = chunk;
    } else {
      const keep = this.buf.subarray(this.eventStart);
      this.lineStart -= this.eventStart;
      this.eventStart = 0;
      this.buf = Buffer.concat([keep, chunk]);
    }
    const out: SseEvent[] = [];
    const buf = this.buf;
    let pos = this.lineStart;
    // Next LF / CR at or after `pos`; searched again only once passed, so a chunk is
    // scanned in linear time however many lines it holds.
    let lf = buf.indexOf(LF, pos);
    let cr = buf.indexOf(CR, pos);
    while (pos < buf.length) {
      if (lf !== -1 && lf < pos) lf = buf.indexOf(LF, pos);
      if (cr !== -1 && cr < pos) cr = buf.indexOf(CR, pos);
      let end: number;
      let next: number;
      if (cr !== -1 && (lf === -1 || cr < lf)) {
        // CR alone ends a line; CRLF counts as one terminator. A CR at the very end may be
        // the first half of a CRLF still in flight: wait for more bytes.
        if (cr === buf.length - 1) break;
        end = cr;
        next = buf[cr + 1] === LF ? cr + 2 : cr + 1;
      } else if (lf !== -1) {
        end = lf;
        next = lf + 1;
      } else {
        break;
      }
      if (end === pos) {
        // Blank line: the event is complete. A stray blank line becomes an event with no
        // data, so the relay can still forward its bytes. One that came whole in this read
        // may still be too large: the events before it are returned, the next call throws.
        if (next - this.eventStart > this.maxEventBytes) {
          this.tooLarge = true;
          this.reset();
          return out;
        }
        out.push(this.dispatch(buf, next));
      } else {
        this.field(buf, pos, end);
      }
      pos = next;
    }
    this.lineStart = pos;
    this.checkSize();
    return out;
  }

  /** The event being read, its data lines included, stays within maxEventBytes (an upstream cannot exhaust memory with one event). */
  private checkSize(): void {
    const pending = this.buf.length - this.eventStart + this.waitingBytes + (this.data?.length ?? 0);
    if (pending > this.maxEventBytes) {
      this.reset();
      throw new EventTooLarge(this.maxEventBytes);
    }
  }

  /** Drops everything read (after an event too large), so its memory can go. */
  private reset(): void {
    this.buf = Buffer.alloc(0);
    this.waiting = [];
    this.waitingBytes = 0;
    this.data = null;
    this.event = null;
    this.eventStart = 0;
    this.lineStart = 0;
  }

  /**
   * Flushes an unterminated final event when the stream ends (the client's own parser would
   * drop it, so it is reported for bookkeeping and forwarded as-is).
   */
  end(): SseEvent | null {
    if (this.tooLarge) throw new EventTooLarge(this.maxEventBytes);
    if (this.waiting.length > 0) {
      const rest = Buffer.concat(this.waiting);
      this.waiting = [];
      this.waitingBytes = 0;
      this.buf = this.eventStart === this.buf.length ? rest : Buffer.concat([this.buf.subarray(this.eventStart), rest]);
      this.lineStart -= this.eventStart;
      this.eventStart = 0;
    }
    if (this.lineStart < this.buf.length) {
      // A CR held back as a possible CRLF half is, at the end, a line terminator.
      const last = this.buf.length - 1;
      const end = this.buf[last] === CR ? last : this.buf.length;
      if (end > this.lineStart) this.field(this.buf, this.lineStart, end);
    }
    if (this.eventStart >= this.buf.length) return null;
    const ev = this.dispatch(this.buf, this.buf.length);
    this.buf = Buffer.alloc(0);
    this.eventStart = 0;
    this.lineStart = 0;
    return ev;
  }

  /** One field line `name: value` (or `name`, or a comment); the name is compared as bytes, never decoded. */
  private field(buf: Buffer, start: number, end: number): void {
    if (buf[start] === COLON) return; // comment
    let colon = buf.indexOf(COLON, start);
    if (colon === -1 || colon > end) colon = end;
    const len = colon - start;
    const isData = len === 4 && buf[start] === 0x64 && buf[start + 1] === 0x61 && buf[start + 2] === 0x74 && buf[start + 3] === 0x61;
    const isEvent =
      !isData && len === 5 && buf[start] === 0x65 && buf[start + 1] === 0x76 && buf[start + 2] === 0x65 && buf[start + 3] === 0x6e && buf[start + 4] === 0x74;
    if (!isData && !isEvent) return;
    let vStart = colon + 1;
    if (vStart < end && buf[vStart] === 0x20) vStart++;
    const value = vStart <= end ? buf.toString('utf8', vStart, end) : '';
    if (isEvent) this.event = value;
    else this.data = this.data === null ? value : `${this.data}\n${value}`;
  }

  private dispatch(buf: Buffer, next: number): SseEvent {
    const ev: SseEvent = { raw: buf.subarray(this.eventStart, next), data: this.data, event: this.event };
    this.eventStart = next;
    this.data = null;
    this.event = null;
    return ev;
  }
}

/**
 * The event with the blank line it was missing, if any: an event flushed by `end()` may stop
 * mid-line or after one line end, and a frame written after it (a gateway's `[DONE]`) must not
 * run into it. Appends what ends its last line and the blank line, in the event's own
 * line-end style (CRLF, CR or LF).
 */
export function terminated(ev: SseEvent): SseEvent {
  const raw = ev.raw;
  const n = raw.length;
  const last = n > 0 ? raw[n - 1] : undefined;
  const crlf = n >= 2 && raw[n - 2] === CR && last === LF;
  if (crlf ? n >= 4 && raw[n - 4] === CR && raw[n - 3] === LF : n >= 2 && last !== undefined && (last === LF || last === CR) && raw[n - 2] === last) return ev;
  const eol = crlf || (raw.includes(CR) && raw.includes(LF)) ? '\r\n' : raw.includes(CR) ? '\r' : '\n';
  const missing = last === LF || last === CR ? eol : eol + eol;
  return { ...ev, raw: Buffer.concat([raw, Buffer.from(missing)]) };
}
