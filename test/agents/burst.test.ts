/**
 * A burst of real agents over accounts that take little: 8 Codex and 8 Claude Code runs at
 * once, each with its own defaults, through one gateway in front of two fake accounts that
 * each take 2 calls in flight and answer 429 (the recorded OpenAI rate-limit body) above
 * that, as a provider account does. The gateway is told no limit: both models count every
 * call as deep (`deep_effort: medium`, the agents' default effort), so it learns each
 * account's capacity from the 429s and queues or sheds the rest. Every run must finish, no
 * agent may see a 429 or 503 of the gateway's, and every delivered turn is booked ok with the
 * account's reported usage.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { agentAccount, doneText, type WireApi } from '../helpers/agent-providers.js';
import { claudePrint, codexExec, installAgents, ROOT, tail, type AgentRun } from '../helpers/agents.js';
import { FakeUpstream, type ReceivedRequest, type ScriptedReply } from '../helpers/fake-upstream.js';
import { CLIENT_KEY, startGateway, type TestGateway } from '../helpers/gateway.js';
import { hashKey } from '../../src/auth/keys.js';

/** Calls in flight an account takes; the next one gets a 429. */
const TAKES = 2;
const RATE_LIMITED = JSON.parse(readFileSync(join(ROOT, 'test', 'fixtures', 'openai-error-429-rate-limit-exceeded.json'), 'utf8')) as unknown;
/** 429s the accounts answered. */
let throttles = 0;

/** An account of wire API `wire` that takes TAKES calls at once, each streamed over ~300 ms. */
function throttlingAccount(upstream: FakeUpstream, wire: WireApi): (req: ReceivedRequest) => ScriptedReply {
  const script = agentAccount(wire);
  return (req) => {
    if (upstream.inFlight > TAKES) {
      throttles++;
      return { status: 429, body: RATE_LIMITED };
    }
    const reply = script(req);
    return { ...reply, steps: [{ delayMs: 200 }, ...(reply.steps ?? []).flatMap((s, i) => (i === 1 ? [{ delayMs: 100 }, s] : [s]))] };
  };
}

function burstConfig(responsesUrl: string, chatUrl: string): string {
  const targets = '[{ upstream: responses-account, model: fake-codex }, { upstream: chat-account, model: fake-codex }]';
  return `
upstreams:
  - { id: responses-account, provider: openai-compatible, base_url: "${responsesUrl}/v1", api_key: "\${TEST_UPSTREAM_KEY}", options: { chat: false, responses: true } }
  - { id: chat-account, provider: openai-compatible, base_url: "${chatUrl}/v1", api_key: "\${TEST_UPSTREAM_KEY}" }
models:
  - name: codex-side
    aliases: ["gpt-*", "codex-*"]
    reasoning: true
    deep_effort: medium
    price: { input: 1, output: 2 }
    targets: ${targets}
  - name: claude-side
    aliases: ["claude-*"]
    reasoning: true
    deep_effort: medium
    price: { input: 1, output: 2 }
    targets: ${targets.replaceAll('fake-codex', 'fake-claude')}
keys:
  - { name: agents-test, key_sha256: ${hashKey(CLIENT_KEY)} }
`;
}

const PROMPT = 'Run a command that prints a greeting.';

describe('a burst of 8 Codex and 8 Claude Code runs over two accounts that take 2 calls each', { timeout: 400_000 }, () => {
  const responses = new FakeUpstream();
  const chat = new FakeUpstream();
  let gw: TestGateway;
  before(async () => {
    await installAgents();
    await responses.start();
    await chat.start();
    responses.on(throttlingAccount(responses, 'responses'));
    chat.on(throttlingAccount(chat, 'chat'));
    gw = await startGateway(burstConfig(responses.url, chat.url));
  });
  after(async () => {
    await gw?.close();
    await responses.close();
    await chat.close();
  });

  test('every run finishes, none sees a gateway 429 or 503, every delivered turn is booked ok with reported usage', async () => {
    const runs: Promise<{ agent: string; r: AgentRun }>[] = [];
    for (let i = 0; i < 8; i++) {
      runs.push(codexExec(gw.url, PROMPT, { killMs: 240_000 }).then((r) => ({ agent: `codex#${i}`, r })));
      runs.push(claudePrint(gw.url, PROMPT, { killMs: 240_000 }).then((r) => ({ agent: `claude#${i}`, r })));
    }
    const done = await Promise.all(runs);
    const lines = gw.finished();
    const summary = JSON.stringify(lines.map((l) => [l['api'], l['status'], l['outcome'], l['error_class'], l['attempts'], l['shed']]));
    // The accounts did throttle: the burst is real.
    assert.ok(throttles > 0, `the accounts answered 429 at least once (peaks ${responses.peakInFlight}, ${chat.peakInFlight})`);
    for (const { agent, r } of done) {
      assert.equal(r.code, 0, `${agent}: ${tail(r)}\n${summary}`);
      assert.ok(r.stdout.includes(doneText('responses')) || r.stdout.includes(doneText('chat')), `${agent} printed an account's answer:\n${tail(r)}`);
    }
    const refused = lines.filter((l) => l['status'] === 429 || l['status'] === 503);
    assert.deepEqual(
      refused.map((l) => [l['api'], l['status'], l['error_class'], l['shed']]),
      [],
      `no turn got the gateway's 429 or 503: ${summary}`,
    );
    const streamed = lines.filter((l) => l['stream'] === true && (l['attempts'] as number) >= 1);
    assert.ok(streamed.length >= 32, `two model turns or more per run: ${streamed.length}`);
    const got = streamed.map((l) => [l['status'], l['outcome'], l['tokens_estimated']]);
    assert.deepEqual(
      got,
      got.map(() => [200, 'ok', false]),
      `every delivered turn booked ok with reported usage: ${summary}`,
    );
  });
});
