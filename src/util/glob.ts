/**
 * The one glob matcher of config names: a key's allowed models (`keys[].models`,
 * auth/keys.ts) and a model's `aliases` (config/aliases.ts). `*` matches any run of
 * characters (none included, newlines included); every other character matches itself; a
 * pattern without `*` is an exact name.
 *
 * Written here rather than taken from picomatch/minimatch: those are installed only as
 * ESLint's dev dependencies, not with the gateway, and their path semantics (`/`, `**`,
 * `?`, braces, extglobs) are wrong for model names, which may contain `/` and `.`. No
 * regular expression is built from config text: a regex of `a*b*` backtracks on a long name
 * that almost matches (a 384 KB model name held the event loop for seconds), where this
 * takes time linear in the name's length (one `startsWith`, one `endsWith`, one left-to-right
 * `indexOf` pass per `*`-separated part).
 */

/** Whether `name` matches `pattern` (see the file comment). */
export function globMatch(pattern: string, name: string): boolean {
  if (pattern === '*') return true;
  if (!pattern.includes('*')) return pattern === name;
  const parts = pattern.split('*');
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (name.length < first.length + last.length || !name.startsWith(first) || !name.endsWith(last)) return false;
  // Middle parts, each at its leftmost place after the previous one, before the fixed suffix:
  // the leftmost place leaves the most room for the rest, so no other choice needs trying.
  let at = first.length;
  const end = name.length - last.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const part = parts[i]!;
    if (part === '') continue;
    const found = name.indexOf(part, at);
    if (found === -1 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}
