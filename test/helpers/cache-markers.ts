/**
 * Reading prompt-cache markers (`cache_control`) in Messages wire bodies, for the tests of
 * src/translate/messages-cache.ts.
 */
type Obj = Record<string, unknown>;

/** How many `cache_control` keys `v` holds, at any depth. */
export function markers(v: unknown): number {
  if (Array.isArray(v)) return v.reduce((n: number, x) => n + markers(x), 0);
  if (!v || typeof v !== 'object') return 0;
  return Object.entries(v as Obj).reduce((n, [k, x]) => n + (k === 'cache_control' ? 1 : 0) + markers(x), 0);
}

/** `v` without `cache_control` keys, a string `system` or `content` as one text block: what the model reads. */
export function prompt(v: unknown, key = ''): unknown {
  if (typeof v === 'string' && (key === 'system' || key === 'content')) return v === '' ? v : [{ type: 'text', text: v }];
  if (Array.isArray(v)) return v.map((x) => prompt(x));
  if (!v || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.entries(v as Obj)
      .filter(([k]) => k !== 'cache_control')
      .map(([k, x]) => [k, prompt(x, k)]),
  );
}
