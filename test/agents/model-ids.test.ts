/**
 * Every model id the pinned agents send on their own, read from the installed packages (not
 * typed here), is served by the default config, and every reasoning effort they offer is
 * accepted: Codex's whole catalog and efforts (`codex debug models --bundled`), the id Codex
 * sends with the README's config.toml (no model line), the ids Claude Code sends with no
 * `--model` and with each shortcut its `sdk-tools.d.ts` declares (opus, sonnet, haiku …),
 * captured by a fake account the agents talk to directly, and the levels of `claude --effort`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { agentAccount } from '../helpers/agent-providers.js';
import { claudeEffortLevels, claudePrint, claudeShortcuts, codexCatalog, codexExec, defaultConfigYaml, installAgents, tail } from '../helpers/agents.js';
import { FakeUpstream } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, startGateway, type TestGateway } from '../helpers/gateway.js';

describe('the ids and efforts the agents send, read from the installed packages, on the default config', { timeout: 300_000 }, () => {
  const codexAccount = new FakeUpstream();
  const claudeAccount = new FakeUpstream();
  let gw: TestGateway;
  let catalog: Awaited<ReturnType<typeof codexCatalog>>;
  let codexDefault: string;
  /** What Claude Code sent for no `--model` (key '') and for each shortcut. */
  const claudeSent = new Map<string, string>();

  before(async () => {
    await installAgents();
    await codexAccount.start();
    await claudeAccount.start();
    codexAccount.on(agentAccount('responses', { textOnly: true }));
    claudeAccount.on(agentAccount('messages', { textOnly: true }));
    const shortcuts = claudeShortcuts();
    const [models, codexRun, ...claudeRuns] = await Promise.all([
      codexCatalog(),
      codexExec(codexAccount.url, 'hi'),
      ...['', ...shortcuts].map(async (s) => ({ s, r: await claudePrint(claudeAccount.url, `Say hi. [run ${s || 'default'}]`, s ? { model: s } : {}) })),
    ]);
    catalog = models;
    assert.equal(codexRun.code, 0, tail(codexRun));
    codexDefault = String(codexAccount.requests[0]?.json?.['model']);
    for (const { s, r } of claudeRuns) {
      assert.equal(r.code, 0, tail(r));
      const sent = claudeAccount.requests.find((q) => JSON.stringify(q.json?.['messages'] ?? '').includes(`[run ${s || 'default'}]`))?.json?.['model'];
      assert.equal(typeof sent, 'string', `claude ${s ? `--model ${s}` : 'with no --model'} sent a model`);
      claudeSent.set(s, sent as string);
    }
    gw = await startGateway(defaultConfigYaml(), {});
  });
  after(async () => {
    await gw?.close();
    await codexAccount.close();
    await claudeAccount.close();
  });

  const post = async (path: string, body: Record<string, unknown>) => {
    const res = await fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${CLIENT_KEY}`, 'x-api-key': CLIENT_KEY, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, model: res.headers.get('x-switchyard-model'), text: await res.text() };
  };
  const resolves = async (id: string): Promise<string> => {
    const res = await fetch(`${gw.url}/v1/models/${encodeURIComponent(id)}`, { headers: { authorization: `Bearer ${CLIENT_KEY}` } });
    const body = (await res.json()) as { id?: string };
    assert.equal(res.status, 200, `${id}: ${JSON.stringify(body)}`);
    return body.id!;
  };

  test("Codex's default (sent with the README's config) and every catalog id resolve to gpt-5.5-codex and are served", async () => {
    assert.ok(catalog.length >= 5, `the catalog lists models: ${catalog.map((m) => m.slug).join(', ')}`);
    assert.ok(
      catalog.some((m) => m.slug === codexDefault),
      `the default ${codexDefault} is in the catalog`,
    );
    for (const id of new Set([codexDefault, ...catalog.map((m) => m.slug)])) {
      assert.equal(await resolves(id), 'gpt-5.5-codex', id);
      const r = await post('/v1/responses', { model: id, input: 'hi' });
      assert.equal(r.status, 200, `${id}: ${r.text.slice(0, 500)}`);
    }
  });

  test('every reasoning effort the Codex catalog lists is accepted on /v1/responses (max and ultra too)', async () => {
    const levels = [...new Set(catalog.flatMap((m) => (m.supported_reasoning_levels ?? []).map((l) => l.effort)))];
    assert.ok(levels.length >= 4, levels.join(', '));
    for (const effort of levels) {
      const r = await post('/v1/responses', { model: codexDefault, input: 'hi', reasoning: { effort } });
      assert.equal(r.status, 200, `${effort}: ${r.text.slice(0, 500)}`);
    }
  });

  test("Claude Code's default and its shortcuts' ids resolve to claude-sonnet-4.6 and are served", async () => {
    for (const s of ['opus', 'sonnet', 'haiku'])
      assert.ok(claudeSent.has(s), `sdk-tools.d.ts declares the shortcut ${s}: ${[...claudeSent.keys()].join(', ')}`);
    for (const [s, id] of claudeSent) {
      assert.equal(await resolves(id), 'claude-sonnet-4.6', `${s || 'no --model'}: ${id}`);
      const r = await post('/v1/messages', { model: id, max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(r.status, 200, `${id}: ${r.text.slice(0, 500)}`);
    }
  });

  test('every level of claude --effort is accepted on /v1/messages (max too)', async () => {
    const levels = await claudeEffortLevels();
    assert.ok(levels.includes('high'), levels.join(', '));
    for (const effort of levels) {
      const r = await post('/v1/messages', {
        model: claudeSent.get('')!,
        max_tokens: 64,
        output_config: { effort },
        messages: [{ role: 'user', content: 'hi' }],
      });
      assert.equal(r.status, 200, `${effort}: ${r.text.slice(0, 500)}`);
    }
  });
});
