/**
 * Finds the installed package's root folder (the one holding Switchyard's package.json),
 * from compiled code in `dist/` or `.test-build/src/` alike, to locate shipped data files.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

/** @throws Error when no enclosing package.json named "switchyard" exists. */
export function packageRoot(): string {
  if (cached) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'package.json');
    if (existsSync(candidate) && (JSON.parse(readFileSync(candidate, 'utf8')) as { name?: string }).name === 'switchyard') {
      cached = dir;
      return dir;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error('switchyard package root not found');
    dir = parent;
  }
}
