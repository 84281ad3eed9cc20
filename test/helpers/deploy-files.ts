/**
 * Shared parts of the deployment-file tests (test/integration/deploy-files-*.test.ts),
 * which check Dockerfile, .dockerignore, docker-compose.yml and docker/** without a Docker
 * engine or a Kubernetes API server: the repository root and a reader for its files, YAML
 * shape checks, a Dockerfile parser, docker-compose.yml (parsed once) and its bind mounts,
 * and what a switchyard config says about provider keys and shutdown timing.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';

const here = dirname(fileURLToPath(import.meta.url));
/** The repository root, from the compiled `.test-build/test/helpers`. */
export const ROOT = join(here, '..', '..', '..');
export const read = (rel: string): string => readFileSync(join(ROOT, rel), 'utf8');

export type Obj = Record<string, unknown>;
export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
export function obj(v: unknown, what: string): Obj {
  assert.ok(isObj(v), `${what} is a mapping`);
  return v;
}
export function arr(v: unknown, what: string): unknown[] {
  assert.ok(Array.isArray(v), `${what} is a list`);
  return v;
}
/** Which of the given commands are on PATH. */
export function have(cmd: string): boolean {
  return spawnSync(cmd, ['--version'], { stdio: 'ignore' }).error === undefined;
}

// ---------------------------------------------------------------------------------------
// Dockerfile

export interface Instruction {
  op: string;
  args: string;
  line: number;
}
export interface Stage {
  name: string;
  base: string;
  body: Instruction[];
}

/** Instructions with line continuations joined and comments dropped. */
export function dockerInstructions(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let cur = lines[i]!;
    if (/^\s*(#|$)/.test(cur)) continue;
    while (/\\\s*$/.test(cur) && i + 1 < lines.length) {
      i++;
      const next = lines[i]!;
      if (/^\s*#/.test(next)) continue;
      cur = cur.replace(/\\\s*$/, ' ') + next.trim();
    }
    const m = /^\s*([A-Za-z]+)\s+(.*)$/.exec(cur);
    assert.ok(m, `Dockerfile line ${start + 1} is an instruction: ${cur}`);
    out.push({ op: m[1]!.toUpperCase(), args: m[2]!.trim(), line: start + 1 });
  }
  return out;
}

export function dockerStages(ins: Instruction[]): { args: Map<string, string>; stages: Stage[] } {
  const args = new Map<string, string>();
  const stages: Stage[] = [];
  for (const i of ins) {
    if (i.op === 'ARG' && stages.length === 0) {
      const [k, v] = i.args.split('=', 2);
      args.set(k!.trim(), (v ?? '').trim());
    } else if (i.op === 'FROM') {
      const m = /^(\S+)\s+AS\s+(\S+)$/i.exec(i.args);
      assert.ok(m, `FROM at line ${i.line} names its stage (FROM <image> AS <name>)`);
      const base = m[1]!.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (_s, n: string) => args.get(n) ?? '');
      stages.push({ name: m[2]!, base, body: [] });
    } else {
      assert.ok(stages.length > 0, `${i.op} at line ${i.line} comes after a FROM`);
      stages.at(-1)!.body.push(i);
    }
  }
  return { args, stages };
}

/** COPY's flags and paths (shell form; JSON form too). */
export function copyArgs(i: Instruction): { from?: string; sources: string[]; dest: string } {
  const parts = i.args.startsWith('[') ? (JSON.parse(i.args) as string[]) : i.args.split(/\s+/);
  const flags = parts.filter((p) => p.startsWith('--'));
  const paths = parts.filter((p) => !p.startsWith('--'));
  const from = flags.find((f) => f.startsWith('--from='))?.slice('--from='.length);
  assert.ok(paths.length >= 2, `COPY at line ${i.line} has a source and a destination`);
  return { ...(from ? { from } : {}), sources: paths.slice(0, -1), dest: paths.at(-1)! };
}

// ---------------------------------------------------------------------------------------
// docker-compose.yml

export interface Mount {
  source: string;
  target: string;
  readOnly: boolean;
}

export function composeMounts(svc: Obj): Mount[] {
  return ((svc['volumes'] as unknown[] | undefined) ?? []).flatMap((v): Mount[] => {
    if (typeof v === 'string') {
      const [source, target, mode] = v.split(':');
      return source && target && /^[./]/.test(source) ? [{ source, target, readOnly: mode === 'ro' }] : [];
    }
    const m = obj(v, 'volume');
    return m['type'] === 'bind' ? [{ source: String(m['source']), target: String(m['target']), readOnly: m['read_only'] === true }] : [];
  });
}

/** Variables a switchyard config reads in `api_key: ${VAR}`. */
export function apiKeyVars(yamlText: string): string[] {
  return [...yamlText.matchAll(/api_key:\s*\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]!);
}

/** `server.drain_ms` of a switchyard config (the schema default when absent). */
export function drainMs(yamlText: string): number {
  const server = (parseYaml(yamlText) as { server?: { drain_ms?: number } }).server;
  return server?.drain_ms ?? 25_000;
}

/**
 * The gateway's hard shutdown limit past the drain: src/main.ts gives close-with-grace
 * `drain_ms + SHUTDOWN_MARGIN_MS` (closing pools and Redis) before it exits 1.
 */
export function shutdownMarginMs(): number {
  const main = read('src/main.ts');
  assert.match(main, /closeWithGrace\(\{ delay: drainMs \+ SHUTDOWN_MARGIN_MS/, 'main.ts: close-with-grace delay is drain_ms + SHUTDOWN_MARGIN_MS');
  const m = /const SHUTDOWN_MARGIN_MS = ([\d_]+);/.exec(main);
  assert.ok(m, 'main.ts defines SHUTDOWN_MARGIN_MS');
  return Number(m[1]!.replace(/_/g, ''));
}

export const compose = obj(parseYaml(read('docker-compose.yml'), { merge: true }), 'docker-compose.yml');
export const services = obj(compose['services'], 'services');
export const SWITCHYARDS = ['switchyard-1', 'switchyard-2'];
