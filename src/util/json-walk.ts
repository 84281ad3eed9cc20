/**
 * What every walk over a parsed request body shares. A body may nest as deep as its client
 * likes: `JSON.parse` takes any depth, but a recursive walk (and `JSON.stringify`) overflows
 * the stack near 4,000 levels (Node 20: a bare nest of arrays fails past 4,175 levels), so
 * walks keep their own stack; and a 32 MB body holds millions of values, so a walk lets the
 * event loop run every NODES_PER_TURN values instead of holding it for the whole body.
 */

/** Values a walk visits between two turns of the event loop (~0.1 ms of work on a 2-core box). */
export const NODES_PER_TURN = 4096;

/** Lets timers and I/O run before a long walk goes on. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The slice of work, ms, after which long work on a big body gives the event loop a turn (json-pieces, encode-json, the bounded token count). */
export const SLICE_MS = 8;

/**
 * A pause for long work done in time slices: each call gives the event loop a turn when
 * `sliceMs` of work went by since the last one, and returns at once otherwise.
 */
export function slicePause(sliceMs: number = SLICE_MS): () => Promise<void> {
  let since = performance.now();
  return async () => {
    if (performance.now() - since < sliceMs) return;
    await nextTurn();
    since = performance.now();
  };
}
