/**
 * One agent scenario of test/agents/: the gateway in front of a fake account that speaks one
 * wire API only (test/helpers/agent-providers.ts), both agents run with their own default
 * models (test/helpers/agents.ts), concurrently: each must get its shell call, run the echo,
 * send the output back in a follow-up turn the account sees, and print the account's answer.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ACCOUNT_ECHO, agentAccount, doneText, followUps, type WireApi } from './agent-providers.js';
import { accountConfigYaml, claudePrint, codexExec, installAgents, tail, type AgentRun } from './agents.js';
import { FakeUpstream } from './fake-upstream.js';
import { startGateway, type TestGateway } from './gateway.js';
import { metricValue } from './metrics-text.js';

/** The provider line of the README's WebSocket subsection. */
export const WEBSOCKET: readonly string[] = ['supports_websockets = true'];

/**
 * Asserts every Responses turn came over the WebSocket: Codex's warmup first
 * (`generate: false`, answered by the gateway: no attempt), then two model turns or more,
 * none as an HTTP POST, each with its own request id.
 */
export async function assertOverWebSocket(gw: TestGateway): Promise<void> {
  const responses = gw.finished().filter((l) => l['api'] === 'responses');
  const overHttp = responses.filter((l) => l['transport'] !== 'websocket');
  assert.deepEqual(
    overHttp.map((l) => l['status']),
    [],
    'no Responses turn came as an HTTP POST',
  );
  const turns = responses.filter((l) => l['status'] === 200);
  assert.equal(turns[0]?.['attempts'], 0, 'the first is the warmup, answered by the gateway');
  assert.ok(
    turns.filter((l) => (l['attempts'] as number) >= 1).length >= 2,
    `two model turns or more: ${JSON.stringify(turns.map((l) => [l['attempts'], l['status']]))}`,
  );
  assert.equal(new Set(turns.map((l) => l['request_id'])).size, turns.length, 'each turn has its own request id');
  assert.ok((metricValue(await gw.metricsText(), 'switchyard_websocket_turns_total', {}) ?? 0) >= turns.length);
}

/** The path each wire API is posted to on the account. */
const PATH: Readonly<Record<WireApi, string>> = { chat: '/v1/chat/completions', responses: '/v1/responses', messages: '/v1/messages' };

const PROMPT = 'Run a command that prints a greeting.';

/** A fake account of one wire API and a gateway in front of it, for one agent run. */
interface Account {
  readonly upstream: FakeUpstream;
  readonly gw: TestGateway;
}

/**
 * Registers the scenario: `provider` / `options` make the account (`openai-compatible` with
 * `{ chat: false, responses: true }` is a Responses-only account, `anthropic` a Messages one).
 * Each agent run gets its own account and gateway, so the runs go concurrently and each
 * one's records are its own.
 */
export function accountScenario(wire: WireApi, provider: 'openai-compatible' | 'anthropic', options = '{}'): void {
  describe(`Codex and Claude Code, each on its own default model, against a ${wire}-only account`, { timeout: 400_000, concurrency: true }, () => {
    const open: Account[] = [];
    before(() => installAgents());
    after(async () => {
      for (const a of open) {
        await a.gw.close();
        await a.upstream.close();
      }
    });
    async function account(): Promise<Account> {
      const upstream = new FakeUpstream();
      await upstream.start();
      upstream.on(agentAccount(wire));
      const a = { upstream, gw: await startGateway(accountConfigYaml(upstream.url, provider, options)) };
      open.push(a);
      return a;
    }

    /** The checks every run shares: exit 0, the account's answer printed, the echo's output in a follow-up, every turn on the account's API and booked ok. */
    function check({ upstream, gw }: Account, r: AgentRun, o: { upstreamModel: string; api: string; model: string }): void {
      assert.equal(r.code, 0, tail(r));
      assert.ok(r.stdout.includes(doneText(wire)), `the final text is the account's:\n${tail(r)}`);
      const mine = upstream.requests.filter((q) => q.json?.['model'] === o.upstreamModel);
      assert.ok(mine.length >= 2, `two turns or more reached the account: ${mine.length}\n${tail(r)}`);
      assert.deepEqual([...new Set(mine.map((q) => q.url))], [PATH[wire]], `every turn on the account's ${wire} API`);
      const outputs = followUps(wire, upstream.requests, o.upstreamModel);
      assert.ok(
        outputs.some((out) => out.includes(ACCOUNT_ECHO)),
        `a follow-up carried the echo's output: ${JSON.stringify(outputs).slice(0, 2000)}`,
      );
      const lines = gw.finished().filter((l) => l['api'] === o.api && l['model'] === o.model && l['status'] === 200);
      assert.ok(
        lines.length >= 2,
        `two turns or more finished 200 on /v1/${o.api}: ${JSON.stringify(gw.finished().map((l) => [l['api'], l['model'], l['status'], l['error_class']]))}`,
      );
      // Every streamed turn is complete, with the account's usage, however soon the agent closed.
      const streamed = gw.finished().filter((l) => l['api'] === o.api && l['model'] === o.model && l['stream'] === true);
      const got = streamed.map((l) => [l['status'], l['outcome'], l['tokens_estimated']]);
      assert.deepEqual(
        got,
        got.map(() => [200, 'ok', false]),
        'every streamed turn booked ok with reported usage',
      );
    }

    const CODEX = { upstreamModel: 'fake-codex', api: 'responses', model: 'codex-side' };

    test(`codex exec (the README's config.toml): the shell call runs and its output goes back to the ${wire} account`, async () => {
      const a = await account();
      check(a, await codexExec(a.gw.url, PROMPT), CODEX);
    });

    test(`codex exec over the Responses WebSocket (supports_websockets): the same, every turn over the socket`, async () => {
      const a = await account();
      check(a, await codexExec(a.gw.url, PROMPT, { providerLines: WEBSOCKET }), CODEX);
      await assertOverWebSocket(a.gw);
    });

    test(`claude -p (no --model): the Bash call runs and its output goes back to the ${wire} account`, async () => {
      const a = await account();
      check(a, await claudePrint(a.gw.url, PROMPT), { upstreamModel: 'fake-claude', api: 'messages', model: 'claude-side' });
    });
  });
}
