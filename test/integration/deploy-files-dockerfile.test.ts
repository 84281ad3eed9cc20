/**
 * The Dockerfile and .dockerignore, checked without a Docker engine: the stages, COPY
 * sources (present and not excluded by .dockerignore), user, health check, ports, signal
 * and entry point. (The runtime stage's file layout is started in
 * deploy-files-runtime-layout.test.ts.)
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join, posix } from 'node:path';
import { describe, test } from 'node:test';
import { ROOT, copyArgs, dockerInstructions, dockerStages, read, type Stage } from '../helpers/deploy-files.js';

/** .dockerignore as (pattern regex, negated) pairs; the last match decides. */
function dockerignore(text: string): { re: RegExp; negate: boolean; pattern: string }[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((raw) => {
      const negate = raw.startsWith('!');
      const pattern = posix.normalize((negate ? raw.slice(1) : raw).replace(/^\/+/, '')).replace(/\/+$/, '');
      let re = '';
      for (let k = 0; k < pattern.length; k++) {
        const c = pattern[k]!;
        if (c === '*' && pattern[k + 1] === '*') {
          re += '.*';
          k++;
          if (pattern[k + 1] === '/') {
            re = re.slice(0, -2) + '(?:.*/)?';
            k++;
          }
        } else if (c === '*') re += '[^/]*';
        else if (c === '?') re += '[^/]';
        else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
      }
      return { re: new RegExp(`^${re}$`), negate, pattern: raw };
    });
}

/** Whether `rel` (or a parent folder of it) is excluded from the build context. */
function ignored(rules: ReturnType<typeof dockerignore>, rel: string): string | null {
  const parts = posix.normalize(rel).replace(/\/+$/, '').split('/');
  let hit: string | null = null;
  for (let n = 1; n <= parts.length; n++) {
    const prefix = parts.slice(0, n).join('/');
    for (const r of rules) if (r.re.test(prefix)) hit = r.negate ? null : r.pattern;
    if (hit) return hit;
  }
  return hit;
}

describe('Dockerfile', () => {
  const text = read('Dockerfile');
  const ins = dockerInstructions(text);
  const { stages } = dockerStages(ins);
  const build = stages.find((s) => s.name === 'build');
  const runtime = stages.find((s) => s.name === 'runtime');
  const pkg = JSON.parse(read('package.json')) as { files: string[]; engines: { node: string }; bin: Record<string, string>; scripts: Record<string, string> };
  const ops = (s: Stage | undefined, op: string) => (s?.body ?? []).filter((i) => i.op === op);

  test('has a build stage and a final runtime stage on one pinned Node LTS slim image', () => {
    assert.deepEqual(
      stages.map((s) => s.name),
      ['build', 'runtime'],
    );
    for (const s of stages) {
      const m = /^node:(\d+)-slim(@sha256:[0-9a-f]{64})?$/.exec(s.base);
      assert.ok(m, `stage ${s.name} is FROM node:<major>-slim, got ${s.base}`);
      const major = Number(m[1]);
      assert.equal(major % 2, 0, 'an even (LTS) Node major');
      const min = Number(/>=\s*(\d+)/.exec(pkg.engines.node)?.[1]);
      assert.ok(major >= 22 && major >= min, `Node ${major} is supported (engines ${pkg.engines.node}; 20 is end-of-life)`);
    }
    assert.equal(build!.base, runtime!.base, 'build and runtime use the same Node');
  });

  test('build stage installs dev dependencies and compiles; runtime installs production dependencies only', () => {
    const buildRuns = ops(build, 'RUN').map((i) => i.args);
    assert.ok(
      buildRuns.some((r) => /\bnpm ci\b/.test(r) && !/--omit=dev|--production/.test(r)),
      'build: npm ci with dev dependencies',
    );
    assert.ok(
      buildRuns.some((r) => /\bnpm run build\b/.test(r)),
      'build: npm run build',
    );
    const runRuns = ops(runtime, 'RUN').map((i) => i.args);
    assert.ok(
      runRuns.some((r) => /\bnpm ci\b/.test(r) && /--omit=dev/.test(r) && /--ignore-scripts/.test(r)),
      'runtime: npm ci --omit=dev --ignore-scripts',
    );
    assert.ok(!runRuns.some((r) => /npm run build|\btsc\b/.test(r)), 'runtime does not compile');
  });

  test('every COPY source exists in the repo and is in the build context, or comes from the build stage', () => {
    const rules = dockerignore(read('.dockerignore'));
    const buildWorkdir = ops(build, 'WORKDIR').at(-1)?.args;
    assert.ok(buildWorkdir, 'build stage sets WORKDIR');
    for (const s of stages) {
      for (const i of ops(s, 'COPY').concat(ops(s, 'ADD'))) {
        assert.equal(i.op, 'COPY', `line ${i.line}: COPY, not ADD`);
        const c = copyArgs(i);
        for (const src of c.sources) {
          if (c.from) {
            assert.equal(c.from, 'build', `line ${i.line}: copies from the build stage`);
            // Produced by `npm run build`: tsconfig.json's outDir, under the build WORKDIR.
            const outDir = (JSON.parse(read('tsconfig.json')) as { compilerOptions: { outDir: string } }).compilerOptions.outDir;
            assert.equal(src, posix.join(buildWorkdir, outDir), `line ${i.line}: ${src} is the compiled output`);
          } else {
            assert.ok(existsSync(join(ROOT, src)), `line ${i.line}: COPY source ${src} exists`);
            assert.equal(ignored(rules, src), null, `line ${i.line}: ${src} is excluded by .dockerignore`);
          }
        }
      }
    }
  });

  test('.dockerignore keeps local build output, dependencies and git out of the context', () => {
    const rules = dockerignore(read('.dockerignore'));
    for (const p of ['node_modules', 'src/node_modules', '.test-build', 'dist', '.git', 'test', '.env']) {
      assert.ok(ignored(rules, p), `${p} is excluded`);
    }
  });

  test('runtime stage ships package.json, dist, config and the runtime data that package.json "files" lists', () => {
    const copied = new Set(
      ops(runtime, 'COPY').flatMap((i) => copyArgs(i).sources.map((s) => (copyArgs(i).from ? posix.relative(ops(build, 'WORKDIR').at(-1)!.args, s) : s))),
    );
    // package.json marks the package root that src/util/package-root.ts looks for.
    assert.ok(copied.has('package.json'), 'package.json');
    assert.ok(copied.has('package-lock.json'), 'package-lock.json (npm ci)');
    for (const f of pkg.files.filter((f) => f !== 'README.md' && f !== 'docs')) assert.ok(copied.has(f), `${f} (package.json files)`);
    // The simulator reads its recordings from <package root>/src/providers/simulator/recordings.
    assert.match(read('src/providers/simulator/recordings.ts'), /join\(packageRoot\(\), 'src', 'providers', 'simulator', 'recordings'\)/);
    assert.ok(copied.has('src/providers/simulator/recordings'));
  });

  test('runtime stage: non-root USER, HOST/PORT env, ports, HEALTHCHECK on /healthz, SIGTERM, node dist/main.js', () => {
    const user = ops(runtime, 'USER').at(-1)?.args;
    assert.ok(user, 'runtime sets USER');
    assert.ok(!/^(root|0)(:|$)/.test(user), `USER ${user} is not root`);
    const env = ops(runtime, 'ENV')
      .map((i) => i.args)
      .join(' ');
    assert.match(env, /\bHOST=0\.0\.0\.0\b/);
    assert.match(env, /\bPORT=8080\b/);
    const exposed = ops(runtime, 'EXPOSE').flatMap((i) => i.args.split(/\s+/));
    assert.ok(exposed.includes('8080') && exposed.includes('9901'), `EXPOSE 8080 9901, got ${exposed.join(' ')}`);
    const hc = ops(runtime, 'HEALTHCHECK').at(-1)?.args;
    assert.ok(hc, 'HEALTHCHECK');
    assert.match(hc, /CMD\s+\[/, 'HEALTHCHECK CMD in exec form');
    assert.match(hc, /\/healthz/);
    assert.ok(!/\bcurl\b|\bwget\b/.test(hc), 'no curl/wget in a slim image');
    assert.equal(ops(runtime, 'STOPSIGNAL').at(-1)?.args, 'SIGTERM');
    const entry = ops(runtime, 'ENTRYPOINT').at(-1)?.args;
    assert.ok(entry, 'ENTRYPOINT');
    const argv = JSON.parse(entry) as string[];
    assert.equal(argv[0], 'node', 'exec form, node as PID 1');
    assert.equal(argv.at(-1), 'dist/main.js');
    // The heap flags are the same as `npm start`'s (package.json), so the image and a plain start behave alike.
    // `exec`: npm's SIGTERM goes to the shell it runs the script in; exec makes that shell node.
    const start = /^exec\s+node\s+(.*)\s+dist\/main\.js$/.exec(pkg.scripts['start'] ?? '');
    assert.ok(start, `npm start is "exec node <flags> dist/main.js", got ${pkg.scripts['start']}`);
    assert.deepEqual(argv.slice(1, -1), start[1]!.split(/\s+/), "the ENTRYPOINT passes npm start's node flags");
    assert.equal(ops(runtime, 'WORKDIR').at(-1)?.args, '/app');
  });

  test('the ENTRYPOINT file is what `npm run build` makes of src/main.ts', () => {
    const ts = JSON.parse(read('tsconfig.json')) as { compilerOptions: { rootDir: string; outDir: string }; include: string[] };
    assert.equal(ts.compilerOptions.rootDir, 'src');
    assert.equal(ts.compilerOptions.outDir, 'dist');
    assert.ok(ts.include.includes('src'));
    assert.ok(existsSync(join(ROOT, 'src', 'main.ts')), 'src/main.ts -> dist/main.js');
    assert.ok(existsSync(join(ROOT, '.test-build', 'src', 'main.js')), 'and it compiles (the test build of the same file)');
    assert.equal(pkg.bin['switchyard'], 'dist/main.js');
  });
});
