/** The installed package's version, read once from its package.json (next to dist/ or src/). */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from './package-root.js';

let cached: string | undefined;

/** @throws Error when the package root is not found (see package-root.ts). */
export function packageVersion(): string {
  cached ??= (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
  return cached;
}
