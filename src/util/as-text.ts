/**
 * `String(v)` for values read from a client's body or an upstream's answer. `String` throws
 * on an object whose own `toString` is not a function (JSON `{"toString":null}`, or an array
 * holding one): a TypeError that escaped the translators (a client's body answered 500, an
 * upstream's answer taken for a dropped connection; found by test/hostile). Such a value is
 * written as its JSON text instead.
 */
export function asText(v: unknown): string {
  try {
    return String(v);
  } catch {
    return JSON.stringify(v) ?? '';
  }
}
