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

/**
 * Checks that `body` nests objects and arrays at most MAX_NESTING levels deep, without
 * recursion: one level at a time (about 0.2 ms for a 1 MB agent prompt, a tenth of parsing
 * it), yielding to the event loop every NODES_PER_TURN containers, so a body of millions of
 * small values does not hold it; a smaller body is checked without a turn of the loop.
 * @throws GatewayError 400 `invalid_request_error` naming the cap when it nests deeper.
 */
export async function checkNesting(body: unknown): Promise<void> {
  if (body === null || typeof body !== 'object') return;
  let level: object[] = [body];
  let turn = NODES_PER_TURN;
  for (let depth = 1; level.length > 0; depth++) {
    if (depth > MAX_NESTING) {
      throw new GatewayError('GW_ERR_INVALID_REQUEST', {
        message: `The request body nests objects and arrays more than ${MAX_NESTING} levels deep; send it flatter.`,
      });
    }
    const next: object[] = [];
    for (const value of level) {
      if (--turn === 0) {
        turn = NODES_PER_TURN;
        await nextTurn();
      }
      if (Array.isArray(value)) {
        for (const child of value as unknown[]) if (child !== null && typeof child === 'object') next.push(child);
      } else {
        for (const k in value) {
          const child = (value as Record<string, unknown>)[k];
          if (child !== null && typeof child === 'object') next.push(child);
        }
      }
    }
    level = next;
  }
}
