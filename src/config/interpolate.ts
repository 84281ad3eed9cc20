/**
 * `${ENV_VAR}` secret references in the config: every string of the parsed document may
 * hold `${VAR}` or `${VAR:-default}`, resolved from the environment before validation.
 */

const REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/** A reference whose variable is unset (or empty) and has no default. */
export interface Unresolved {
  /** JSON pointer of the string that holds it (`/upstreams/0/api_key`). */
  path: string;
  variable: string;
}

/**
 * Replaces `${VAR}` / `${VAR:-default}` in every string of the tree (an unset one becomes
 * the empty string) and records the unset ones in `unresolved`.
 * @param path JSON pointer of `node` in the document (`''` for the root).
 */
export function interpolate(node: unknown, path: string, env: NodeJS.ProcessEnv, unresolved: Unresolved[]): unknown {
  if (typeof node === 'string') {
    return node.replace(REF, (_m, name: string, fallback: string | undefined) => {
      const value = env[name];
      if (value !== undefined && value !== '') return value;
      if (fallback !== undefined) return fallback;
      unresolved.push({ path, variable: name });
      return '';
    });
  }
  if (Array.isArray(node)) return node.map((v, i) => interpolate(v, `${path}/${i}`, env, unresolved));
  if (node && typeof node === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) out[k] = interpolate(v, `${path}/${k}`, env, unresolved);
    return out;
  }
  return node;
}
