/**
 * The shape of `src/`'s import graph, read by madge with the project's tsconfig:
 *
 * (a) no import cycles, type-only imports and `export ... from` included;
 * (b) imports point down the layers (below), never up;
 * (c) no source file over 300 lines (the console's browser files included).
 *
 * Where today's code breaks (a), (b) or (c) in files this test may not fix, the exception
 * is listed in KNOWN_CYCLES, KNOWN_UPWARD_IMPORTS or KNOWN_LONG_FILES. Each list must be
 * exactly what the code does: a new exception fails the test (fix the import instead of
 * adding to a list), and so does an entry that no longer applies (delete it). The lists
 * can only shrink, to empty.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { before, describe, test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
/** The repository root, from the compiled `.test-build/test/unit`. */
const ROOT = join(here, '..', '..', '..');
const SRC = join(ROOT, 'src');

/** The layers, top to bottom. A file may import files of its own layer or of a lower one. */
const LAYERS: readonly (readonly string[])[] = [
  ['main.ts'],
  ['app.ts'],
  // The client app's features as Fastify plugins (and the parts they share), composed by app.ts.
  ['plugins/'],
  // server/'s subfolders (http/, lifecycle/, reload/, cluster/, admin/, console/, ws/) and
  // its shared gateway.ts and logger.ts are all this layer.
  ['routes/', 'server/'],
  ['pipeline/'],
  // Trace spans of model calls: the pipeline opens and ends them; they read attempts
  // (router/), providers and finished records.
  ['tracing/'],
  ['router/'],
  ['providers/'],
  ['translate/'],
  ['apis/'],
  ['upstream/'],
  // The usage ledger: reads finished records (record/) and its config; only plugins/ and
  // server/ (readiness) know it.
  ['ledger/'],
  // The floor: modules that may import one another (where no cycle results, see (a)) but
  // nothing above them. translate/, usage/ and record/ may not exist yet.
  ['auth/', 'limits/', 'store/', 'metrics/', 'errors/', 'usage/', 'record/', 'config/', 'sse/', 'util/'],
];

const MAX_LINES = 300;

/**
 * Import cycles today, each written from its alphabetically first file (`a > b` means a
 * imports b, and the last file imports the first).
 */
const KNOWN_CYCLES: readonly string[] = [];

/** Imports that point up the layers today (`importer -> imported`), sorted. */
const KNOWN_UPWARD_IMPORTS: readonly string[] = [];

/** Source files over MAX_LINES today (paths under src/), sorted. */
const KNOWN_LONG_FILES: readonly string[] = [];

/** The part of madge's API this test uses (madge ships no types). */
interface MadgeResult {
  obj(): Record<string, string[]>;
  circular(): string[][];
  skipped: string[];
}
type Madge = (path: string, config: Record<string, unknown>) => Promise<MadgeResult>;
const madge = createRequire(import.meta.url)('madge') as Madge;

/** Reads the import graph under `dir`, every kind of import counted. */
function importGraph(dir: string): Promise<MadgeResult> {
  // Type-only imports and re-exports count: a cycle through types still couples the files.
  const detective = { skipTypeImports: false, skipAsyncImports: false };
  return madge(dir, {
    fileExtensions: ['ts'],
    tsConfig: join(ROOT, 'tsconfig.json'),
    detectiveOptions: { ts: detective, tsx: detective },
  });
}

/** Every file under `dir` whose name ends with one of `exts` (default `.ts`), as a `/`-separated path relative to it. */
function sourceFiles(dir: string, exts: readonly string[] = ['.ts']): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && exts.some((x) => e.name.endsWith(x)))
    .map((e) => relative(dir, join(e.parentPath, e.name)).split(sep).join('/'))
    .sort();
}

/** The layer index of a file under src/ (0 is the top); -1 when no layer names it. */
function layerOf(file: string): number {
  return LAYERS.findIndex((layer) => layer.some((p) => (p.endsWith('/') ? file.startsWith(p) : file === p)));
}

/** A cycle written from its alphabetically first file, so the same cycle always reads the same. */
function cycleName(cycle: readonly string[]): string {
  const first = cycle.indexOf([...cycle].sort()[0]!);
  return [...cycle.slice(first), ...cycle.slice(0, first)].join(' > ');
}

/** Prints an allowlist into the test's output, one entry per line. */
function printList(t: TestContext, list: string, entries: readonly string[]): void {
  t.diagnostic(`${list}: ${entries.length} ${entries.length === 1 ? 'entry' : 'entries'}`);
  for (const e of entries) t.diagnostic(`  ${e}`);
}

/** Fails unless `found` is exactly `known`, naming what is new and what is gone. */
function assertExactly(found: readonly string[], known: readonly string[], list: string, what: string): void {
  const added = found.filter((x) => !known.includes(x));
  const gone = known.filter((x) => !found.includes(x));
  const lines: string[] = [];
  if (added.length > 0) lines.push(`new ${what} (fix them; ${list} only shrinks):\n    ${added.join('\n    ')}`);
  if (gone.length > 0) lines.push(`no longer ${what}: delete them from ${list}:\n    ${gone.join('\n    ')}`);
  assert.ok(lines.length === 0, lines.join('\n'));
}

describe('import graph of src/', () => {
  let graph: Record<string, string[]>;
  let result: MadgeResult;

  before(async () => {
    result = await importGraph(SRC);
    graph = result.obj();
  });

  test('madge read every source file and resolved every relative import', () => {
    assert.deepEqual(Object.keys(graph).sort(), sourceFiles(SRC));
    // Only npm specifiers may be left unresolved (a subpath import madge cannot follow).
    assert.deepEqual(
      result.skipped.filter((s) => s.startsWith('.') || s.startsWith('/')),
      [],
    );
  });

  test('the madge options count type-only imports and re-exports', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-import-graph-'));
    try {
      writeFileSync(join(dir, 'a.ts'), "import type { B } from './b.js';\nexport type A = B | 0;\n");
      writeFileSync(join(dir, 'b.ts'), "export type { A as B } from './a.js';\n");
      assert.deepEqual((await importGraph(dir)).circular(), [['a.ts', 'b.ts']]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('(a) no import cycles but the known ones', (t) => {
    const cycles = result.circular().map(cycleName).sort();
    printList(t, 'KNOWN_CYCLES', KNOWN_CYCLES);
    assertExactly(cycles, KNOWN_CYCLES, 'KNOWN_CYCLES', 'import cycles');
  });

  test('(b) imports point down the layers, but the known exceptions', (t) => {
    const unplaced = Object.keys(graph).filter((f) => layerOf(f) === -1);
    assert.deepEqual(unplaced, [], 'every file under src/ belongs to a layer: add its folder to LAYERS');
    const upward = Object.entries(graph)
      .flatMap(([from, deps]) => deps.filter((to) => layerOf(to) < layerOf(from)).map((to) => `${from} -> ${to}`))
      .sort();
    printList(t, 'KNOWN_UPWARD_IMPORTS', KNOWN_UPWARD_IMPORTS);
    assertExactly(upward, KNOWN_UPWARD_IMPORTS, 'KNOWN_UPWARD_IMPORTS', 'upward imports');
  });

  test(`(c) no source file over ${MAX_LINES} lines, but the known ones`, (t) => {
    // Source files only, TypeScript and the console's browser files (.js, .css, .html): the
    // simulator's recordings under src/ are data.
    const lineCount = (file: string): number => {
      if (!existsSync(join(SRC, file))) return 0;
      const text = readFileSync(join(SRC, file), 'utf8');
      return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    };
    const long = sourceFiles(SRC, ['.ts', '.js', '.css', '.html']).filter((f) => lineCount(f) > MAX_LINES);
    printList(
      t,
      'KNOWN_LONG_FILES',
      KNOWN_LONG_FILES.map((f) => `${f} (${lineCount(f)} lines)`),
    );
    assertExactly(long, KNOWN_LONG_FILES, 'KNOWN_LONG_FILES', `files over ${MAX_LINES} lines`);
  });
});
