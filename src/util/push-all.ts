/**
 * `target.push(...items)` for arrays of any length. A spread passes each item as a call
 * argument, and past roughly 100,000 of them V8 throws RangeError (Maximum call stack size
 * exceeded); a request a client sends can hold that many blocks or items.
 */

/**
 * Appends `items` to `target` in order, one by one (no argument spread), and returns
 * `target`. Never throws for a long `items`; `items` may be any iterable.
 */
export function pushAll<T>(target: T[], items: Iterable<T>): T[] {
  for (const item of items) target.push(item);
  return target;
}
