/**
 * A settable clock for the router's pieces that take an injected `now` (the retry budget,
 * the health and latency boards, session pins): time moves only when a test advances it.
 */

/** A settable clock. */
export function clock(start = 1_700_000_000_000): { now: () => number; t: number; advance(ms: number): void } {
  const c = {
    t: start,
    now: () => c.t,
    advance(ms: number) {
      c.t += ms;
    },
  };
  return c;
}
