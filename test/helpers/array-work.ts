/**
 * A deterministic meter of the work a function does over arrays, for tests that must
 * catch quadratic loops without timing anything: while `fn` runs, every call of an
 * iterating Array method (some, every, filter, map, forEach, find, findIndex, indexOf,
 * includes, reduce, slice, concat, splice) and every array iteration (spread, for...of)
 * adds the array's length to the count. The count is an upper bound on the elements
 * visited; a linear algorithm keeps it proportional to its input.
 */

const METHODS = ['some', 'every', 'filter', 'map', 'forEach', 'find', 'findIndex', 'indexOf', 'includes', 'reduce', 'slice', 'concat', 'splice'] as const;

/**
 * Runs `fn` with Array.prototype instrumented and returns its result and the count (array
 * elements possibly visited). The prototype is restored afterwards, also when `fn` throws.
 */
export function arrayWork<T>(fn: () => T): { result: T; work: number } {
  let work = 0;
  const proto = Array.prototype as unknown as Record<PropertyKey, unknown>;
  const saved = new Map<PropertyKey, unknown>();
  for (const name of [...METHODS, Symbol.iterator] as PropertyKey[]) {
    const original = proto[name] as (this: unknown[], ...args: unknown[]) => unknown;
    saved.set(name, original);
    proto[name] = function (this: unknown[], ...args: unknown[]): unknown {
      work += this.length;
      return original.apply(this, args);
    };
  }
  try {
    return { result: fn(), work };
  } finally {
    for (const [name, original] of saved) proto[name] = original;
  }
}
