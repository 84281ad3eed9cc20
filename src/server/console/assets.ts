/**
 * The console's browser files, `src/server/console/assets/`: the page shell (`page.html`),
 * each page's main section (`live.html`, `spend.html`), the stylesheet (`console.css`) and
 * the scripts (`live.js`, `spend.js`, and `common.js`, `spend-chart.js` that they include).
 *
 * They are read from the package root, not from the compiled output, so `dist/`, the test
 * build and any other `tsc` output find the same files without a copy step: like the
 * simulator recordings, they ship as they are in `src/` (package.json "files", and a COPY
 * line in the Dockerfile's runtime stage). page.ts reads them once, at start.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../util/package-root.js';

/** The folder of the console's browser files. @throws Error when the package root is not found. */
export function consoleAssetsDir(): string {
  return join(packageRoot(), 'src', 'server', 'console', 'assets');
}

/** One asset file's text. @throws Error when it is missing. */
export function readConsoleAsset(name: string): string {
  return readFileSync(join(consoleAssetsDir(), name), 'utf8');
}

/** A line `// @include <file>` (any indent) in a page script. */
const INCLUDE = /^[ \t]*\/\/ @include ([\w.-]+)\r?\n/gm;

/**
 * A page script as the page inlines it: the file's text with every `// @include <file>`
 * line replaced by that file's text, verbatim (one level: an included file includes
 * nothing). Browser code shares names this way while each page keeps one script, allowed
 * by its hash.
 * @throws Error when a file is missing or an included file has an include line.
 */
export function consoleScript(name: string): string {
  return readConsoleAsset(name).replace(INCLUDE, (_line, file: string) => {
    const text = readConsoleAsset(file);
    if (new RegExp(INCLUDE.source, 'm').test(text)) throw new Error(`console asset ${file}: an included file cannot include another`);
    return text;
  });
}
