/**
 * The real agents against a gateway whose every upstream is down, on the default config
 * (config/switchyard.yaml, its routing as shipped) with each provider's base URL pointed at
 * the outage: a port nobody listens on (connection refused), or a provider answering 503 to
 * every call. `codex exec` (Codex's config exactly as the README shows it, telemetry off)
 * and `claude -p` (no `--model`: Claude Code's own default model, served by the `anthropic`
 * account) each print a clear error and exit within 30 s with their own default retry
 * settings, instead of sleeping out a `Retry-After` the gateway cannot keep. And Claude Code
 * stops at once on errors retrying cannot heal: a bad client key, an account whose provider
 * key is refused (`x-should-retry: false`, which it obeys).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { hashKey } from '../../src/auth/keys.js';
import { claudePrint, codexExec, installAgents, type AgentRun } from '../helpers/agents.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, startGateway, UPSTREAM_KEY, type TestGateway } from '../helpers/gateway.js';

const here = dirname(fileURLToPath(import.meta.url));
const ROOT = join(here, '..', '..', '..');

/** What a user waits for before an agent must have given up on a dead upstream, ms. */
const PATIENCE_MS = 30_000;

/** A loopback port that was free a moment ago: nothing listens there (connection refused). */
async function deadPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

/**
 * The default config with every provider account (OpenAI, DeepSeek, Anthropic) at `base`
 * and its key set (so the simulator's standby targets stay out), plus the test's client key.
 */
function downConfig(base: string): string {
  const text = readFileSync(join(ROOT, 'config', 'switchyard.yaml'), 'utf8')
    .replace(/base_url: https:\/\/api\.(openai|deepseek|anthropic)\.com\/v1/g, `base_url: ${base}/v1`)
    .replace(/^keys:\n/m, `keys:\n  - name: agents-test\n    key_sha256: ${hashKey(CLIENT_KEY)}\n    models: ["*"]\n`);
  assert.equal(text.split(`base_url: ${base}/v1`).length - 1, 3, 'the three provider accounts point at the outage');
  return text;
}

const ENV = { OPENAI_API_KEY: UPSTREAM_KEY, DEEPSEEK_API_KEY: UPSTREAM_KEY, ANTHROPIC_API_KEY: UPSTREAM_KEY };

/** A provider that answers every call with a 503 in its API's error shape. */
function unavailable(): FakeUpstream {
  return new FakeUpstream().on((req) => ({
    status: 503,
    body: req.url.startsWith('/v1/messages')
      ? { type: 'error', error: { type: 'api_error', message: 'The provider is unavailable (test outage).' } }
      : { error: { message: 'The provider is unavailable (test outage).', type: 'server_error', param: null, code: null } },
  }));
}

/** The run ended on its own, non-zero, in time, and printed the error it stopped on. */
function assertGaveUp(r: AgentRun, agent: string, error: RegExp): void {
  const all = `${r.stdout}\n${r.stderr}`;
  assert.ok(r.ms < PATIENCE_MS, `${agent} exited after ${r.ms} ms (>= ${PATIENCE_MS}):\n${all.slice(-2000)}`);
  assert.notEqual(r.code, 0, `${agent} exit code:\n${all.slice(-2000)}`);
  assert.match(all, error, `${agent} printed the error:\n${all.slice(-2000)}`);
}

for (const outage of ['connection refused', 'every call answered 503'] as const) {
  describe(`Codex and Claude Code when every upstream is down (${outage})`, { timeout: 300_000 }, () => {
    let provider: FakeUpstream | undefined;
    let base = '';
    /** What the agent prints: the gateway's words for a refused connection, the provider's for its 503. */
    const error = outage === 'connection refused' ? /upstream provider could not be reached/i : /provider is unavailable \(test outage\)/i;
    let gw: TestGateway | undefined;
    before(async () => {
      await installAgents();
      if (outage === 'connection refused') base = `http://127.0.0.1:${await deadPort()}`;
      else base = (provider = await unavailable().start()).url;
    });
    after(async () => {
      await provider?.close();
    });

    test('codex exec prints the error and exits within 30 s', async () => {
      gw = await startGateway(downConfig(base), ENV);
      try {
        const r = await codexExec(gw.url, 'Say hi', { settings: [], killMs: 90_000 });
        assertGaveUp(r, 'codex', error);
      } finally {
        await gw.close();
      }
    });

    test('claude -p (its default model) prints the error and exits within 30 s', async () => {
      gw = await startGateway(downConfig(base), ENV);
      try {
        const r = await claudePrint(gw.url, 'Say hi', { killMs: 90_000 });
        assertGaveUp(r, 'claude', error);
        const lines = gw.finished().filter((l) => l['api'] === 'messages');
        assert.ok(
          lines.length > 0 && lines.every((l) => l['model'] === 'claude-sonnet-4.6'),
          `served as claude-sonnet-4.6 (its alias): ${JSON.stringify(lines.map((l) => l['model']))}`,
        );
      } finally {
        await gw.close();
      }
    });
  });
}

describe('Claude Code stops at once on an error retrying cannot heal', { timeout: 300_000 }, () => {
  let provider: FakeUpstream;
  let gw: TestGateway;
  before(async () => {
    await installAgents();
    // The provider refuses the gateway's own key (a revoked key): the account goes into a long cooldown.
    provider = await new FakeUpstream()
      .on(() => ({ status: 401, body: { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } } }))
      .start();
    gw = await startGateway(downConfig(provider.url), ENV);
  });
  after(async () => {
    await gw?.close();
    await provider?.close();
  });

  test('a bad client key (401)', async () => {
    const r = await claudePrint(gw.url, 'Say hi', { apiKey: 'sk-not-a-switchyard-key-0123456789', killMs: 90_000 });
    assertGaveUp(r, 'claude', /401|API key/i);
  });

  test('an account whose provider key is refused, on the first call and while it cools down (502 upstream_auth_failed)', async () => {
    for (const run of ['first', 'cooling'] as const) {
      const r = await claudePrint(gw.url, 'Say hi', { killMs: 90_000 });
      assertGaveUp(r, `claude (${run})`, /could not authenticate to the upstream/i);
    }
    assert.equal(provider.requests.length, 1, 'the cooling account got no call: the second answer came from the gateway itself');
  });
});
