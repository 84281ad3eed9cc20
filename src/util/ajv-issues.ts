/**
 * Folds ajv's errors for a union of literals (TypeBox `Type.Union([Type.Literal(…), …])`
 * compiles to `anyOf` of `const`) into one `enum` issue that lists the allowed values, so a
 * message says "must be one of: cheap, balanced, …" instead of ajv's "must be equal to
 * constant" once per branch and "must match a schema in anyOf".
 */

/** The fields of an ajv `ErrorObject` this reads and writes. */
export interface AjvIssueLike {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/**
 * Returns `issues` with every path whose only failures are `const` branches of an `anyOf`
 * (and `enum`s, and a `null` branch) replaced by one `enum` issue, `params.allowedValues` listing every value.
 */
export function foldLiteralUnions<T extends AjvIssueLike>(issues: readonly T[]): T[] {
  const byPath = new Map<string, T[]>();
  for (const i of issues) {
    const p = i.instancePath ?? '';
    byPath.set(p, [...(byPath.get(p) ?? []), i]);
  }
  const folded = new Map<string, T>();
  for (const [path, list] of byPath) {
    const branches = list.filter((i) => i.keyword !== 'anyOf');
    const isNull = (i: T) => i.keyword === 'type' && i.params?.['type'] === 'null';
    if (!branches.some((i) => i.keyword === 'const' || i.keyword === 'enum')) continue;
    if (!branches.every((i) => i.keyword === 'const' || i.keyword === 'enum' || isNull(i))) continue;
    const allowed = branches.flatMap((i) =>
      i.keyword === 'const' ? [i.params?.['allowedValue']] : isNull(i) ? [null] : ((i.params?.['allowedValues'] as unknown[]) ?? []),
    );
    const shown = allowed.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ');
    folded.set(path, { ...branches[0]!, keyword: 'enum', message: `must be one of: ${shown}`, params: { allowedValues: allowed } });
  }
  const out: T[] = [];
  const done = new Set<string>();
  for (const i of issues) {
    const p = i.instancePath ?? '';
    const f = folded.get(p);
    if (!f) out.push(i);
    else if (!done.has(p)) {
      done.add(p);
      out.push(f);
    }
  }
  return out;
}
