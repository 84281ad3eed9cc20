/**
 * The nesting cap of model-call bodies. A body nested thousands of levels deep is parsed
 * fine, then breaks whatever serialises or walks it recursively: `JSON.stringify` of the
 * upstream request threw a RangeError that was taken for an unreachable upstream (502, and
 * the account blamed for the client's body). Real prompts nest tens of levels (a tool's
 * JSON Schema, a tool result inside a tool result), far below the cap.
 */
import { GatewayError } from '../errors/codes.js';
import { nextTurn, NODES_PER_TURN } from '../util/json-walk.js';

/** Most levels of objects and arrays a body may nest (the body itself is level 1). */
export const MAX_NESTING = 256;

/** The answer for a body checked within its first turn (every real prompt): no promise made per request. */
const CHECKED: Promise<void> = Promise.resolve();

/**
 * Checks that `body` nests objects and arrays at most MAX_NESTING levels deep, without
 * recursion: one level at a time (about 0.2 ms for a 1 MB agent prompt, a tenth of parsing
 * it), yielding to the event loop every NODES_PER_TURN containers, so a body of millions of
 * small values does not hold it; a smaller body is checked without a turn of the loop (and
 * without an async function or an array per level).
 * @returns a promise rejected with GatewayError 400 `invalid_request_error` naming the cap when it nests deeper.
 */
export function checkNesting(body: unknown): Promise<void> {
  if (body === null || typeof body !== 'object') return CHECKED;
  const walk = new LevelWalk(body);
  try {
    if (walk.run()) return CHECKED;
  } catch (err) {
    return Promise.reject(err as Error);
  }
  return walk.rest();
}

/**
 * The walk, level by level, in two arrays used in turn (the level being read and the next
 * one), each with its own length: no array is made per level.
 */
class LevelWalk {
  private level: object[];
  private levelLen = 1;
  private next: object[] = [];
  private nextLen = 0;
  /** The next container of `level` to read. */
  private pos = 0;
  private depth = 1;

  constructor(body: object) {
    this.level = [body];
  }

  /** Reads up to NODES_PER_TURN containers; true once the whole body was read. @throws the 400 when it nests too deep. */
  run(): boolean {
    for (let turn = NODES_PER_TURN; ;) {
      if (this.pos === this.levelLen) {
        if (this.nextLen === 0) return true;
        if (++this.depth > MAX_NESTING) {
          throw new GatewayError('GW_ERR_INVALID_REQUEST', {
            message: `The request body nests objects and arrays more than ${MAX_NESTING} levels deep; send it flatter.`,
          });
        }
        const read = this.level;
        this.level = this.next;
        this.levelLen = this.nextLen;
        this.next = read;
        this.nextLen = 0;
        this.pos = 0;
      }
      if (--turn === 0) return false;
      const value = this.level[this.pos++]!;
      if (Array.isArray(value)) {
        for (const child of value as unknown[]) if (child !== null && typeof child === 'object') this.next[this.nextLen++] = child;
      } else {
        for (const k in value) {
          const child = (value as Record<string, unknown>)[k];
          if (child !== null && typeof child === 'object') this.next[this.nextLen++] = child;
        }
      }
    }
  }

  /** Reads the rest, a turn of the event loop before each NODES_PER_TURN containers. */
  async rest(): Promise<void> {
    do await nextTurn();
    while (!this.run());
  }
}
