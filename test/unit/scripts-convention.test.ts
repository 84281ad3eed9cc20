/**
 * scripts/README.md's convention: `npm run <group>:<name>` runs `scripts/<group>-<name>.mjs`,
 * every `.mjs` directly under scripts/ is such an entry, and each says on its second line
 * which entry it is.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { packageRoot } from '../../src/util/package-root.js';

const ROOT = packageRoot();
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
/** npm entry -> the scripts/ file its command runs (only entries that run one). */
const entries = new Map<string, string>();
for (const [name, cmd] of Object.entries(pkg.scripts)) {
  const m = /node scripts\/([^\s/]+\.mjs)/.exec(cmd);
  if (m) entries.set(name, m[1]!);
}

describe('scripts/ convention', () => {
  test('npm run <group>:<name> runs scripts/<group>-<name>.mjs', () => {
    assert.ok(entries.size >= 10, `found ${entries.size} entries`);
    for (const [name, file] of entries) assert.equal(file, `${name.replace(':', '-')}.mjs`, `npm run ${name}`);
  });

  test('every .mjs directly under scripts/ is an npm entry', () => {
    const files = readdirSync(join(ROOT, 'scripts')).filter((f) => f.endsWith('.mjs'));
    const run = new Set(entries.values());
    for (const f of files) assert.ok(run.has(f), `scripts/${f} is not run by any npm script: move it under a folder by area (scripts/README.md)`);
  });

  test("each entry's second line names it: // npm run <entry> — …", () => {
    for (const [name, file] of entries) {
      const second = readFileSync(join(ROOT, 'scripts', file), 'utf8').split('\n')[1] ?? '';
      assert.ok(second.startsWith(`// npm run ${name} `), `scripts/${file} line 2: ${second.slice(0, 80)}`);
    }
  });
});
