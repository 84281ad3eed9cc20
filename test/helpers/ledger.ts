/** The ledger tests' setup (a database, a spool folder, a fake upstream), fake upstream script and gateway config (test/postgres). */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashKey } from '../../src/auth/keys.js';
import { FakeUpstream, type Script } from './fake-upstream.js';
import { CLIENT_KEY, startGateway, UPSTREAM_KEY, type TestGateway } from './gateway.js';
import { TestDatabase } from './postgres.js';

const chunk = (o: Record<string, unknown>) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', ...o })}\n\n`;
const STREAM = [
  chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'hi' }, finish_reason: null }] }),
  chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }),
  chunk({ choices: [], usage: { prompt_tokens: 13, completion_tokens: 3, total_tokens: 16 } }),
  'data: [DONE]\n\n',
];
const answer = (usage: Record<string, unknown>) => ({
  status: 200,
  body: {
    id: 'c',
    object: 'chat.completion',
    created: 1,
    model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
    usage,
  },
});

/** The fake upstream: prompts pick the outcome; the cheap model always answers. */
export const script: Script = (req) => {
  const prompt = String((req.json?.['messages'] as { content: string }[] | undefined)?.[0]?.content ?? '');
  if (req.json?.['model'] === 'cheap-x') return answer({ prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 });
  if (prompt === 'fail') return { status: 500, body: { error: { message: 'upstream failed', type: 'server_error', param: null, code: null } } };
  // A provider reporting token counts no ledger column can hold (a fraction, past bigint).
  if (prompt === 'odd-usage') return answer({ prompt_tokens: 1.5, completion_tokens: 1e20, total_tokens: 9 });
  if (prompt === 'bad') return { status: 400, body: { error: { message: 'bad request', type: 'invalid_request_error', param: null, code: null } } };
  // The whole answer, then the body ends 300 ms after [DONE].
  if (prompt === 'linger') return { status: 200, headers: { 'content-type': 'text/event-stream' }, steps: [...STREAM, { delayMs: 300 }] };
  if (prompt === 'slow') return { status: 200, headers: { 'content-type': 'text/event-stream' }, steps: [STREAM[0]!, { delayMs: 3000 }, ...STREAM.slice(1)] };
  if (req.json?.['stream'] === true) return { status: 200, headers: { 'content-type': 'text/event-stream' }, steps: STREAM };
  return answer({
    prompt_tokens: 11,
    completion_tokens: 5,
    total_tokens: 16,
    prompt_tokens_details: { cached_tokens: 4 },
    completion_tokens_details: { reasoning_tokens: 2 },
  });
};

/** A gateway config writing its ledger to `dbUrl`, spooling under `spool`. */
export function ledgerConfig(upstream: string, dbUrl: string, spool: string, extra = ''): string {
  return `
routing: { max_attempts: 2 }
ledger: { postgres_url: "${dbUrl}", flush_ms: 50, retry_ms: 200, spool_path: "${spool}"${extra} }
upstreams:
  - { id: fake, provider: openai-compatible, base_url: "${upstream}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - name: gpt-test
    price: { input: 2.5, cached_input: 1.25, output: 10 }
    fallbacks: [gpt-cheap]
    targets: [{ upstream: fake, model: up-x }]
  - name: gpt-cheap
    price: { input: 0.5, output: 1.5 }
    targets: [{ upstream: fake, model: cheap-x }]
keys:
  - { name: team-a, key_sha256: ${hashKey(CLIENT_KEY)}, metadata: { team: search } }
`;
}

/**
 * One ledger test's world: its own database (dropped by `close`), a spool folder (removed),
 * a fake upstream answering with `reply`, and the gateways it started (closed first).
 */
export class LedgerSetup {
  private readonly gateways: TestGateway[] = [];

  private constructor(
    readonly db: TestDatabase,
    readonly fake: FakeUpstream,
    readonly dir: string,
  ) {}

  static async create(reply: Script = script): Promise<LedgerSetup> {
    const db = await TestDatabase.create();
    const fake = new FakeUpstream();
    await fake.start();
    fake.on(reply);
    return new LedgerSetup(db, fake, mkdtempSync(join(tmpdir(), 'sy-ledger-')));
  }

  /** A spool file path in this setup's folder. */
  spool(name = 'spool'): string {
    return join(this.dir, `${name}.jsonl`);
  }

  /** Starts a gateway on `yaml` (the upstream key in its env), closed by `close`. */
  async gateway(yaml: string, env: NodeJS.ProcessEnv = {}): Promise<TestGateway> {
    const gw = await startGateway(yaml, { TEST_UPSTREAM_KEY: UPSTREAM_KEY, ...env });
    this.gateways.push(gw);
    return gw;
  }

  /** The default ledger gateway: {@link ledgerConfig} on this setup's upstream, database and spool. */
  ledgerGateway(extra = '', env: NodeJS.ProcessEnv = {}, spool = 'spool', dbUrl = this.db.url()): Promise<TestGateway> {
    return this.gateway(ledgerConfig(this.fake.url, dbUrl, this.spool(spool), extra), env);
  }

  async close(): Promise<void> {
    for (const gw of this.gateways) await gw.close();
    await this.fake.close();
    await this.db.drop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
