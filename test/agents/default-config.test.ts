/**
 * Codex and Claude Code, each on its own default model (Codex with the README's config.toml
 * lines, Claude Code with no `--model`), against the gateway on the shipped default config:
 * no provider keys, every model served by the simulator. Each agent's default id reaches a
 * model through the default aliases, the simulator calls the agent's shell (for Codex's
 * default model, through the code-mode `exec` tool), the agent runs the echo and sends its
 * output back, and the follow-up turn's text is the simulator's recorded answer.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { claudePrint, codexExec, defaultConfigYaml, installAgents, SIMULATOR_ECHO, tail } from '../helpers/agents.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { sseEvents } from '../helpers/recordings.js';

/** The first 40 characters of a recorded chat stream's content deltas (what the simulator answers a follow-up with). */
function recordedText(name: string): string {
  let out = '';
  for (const e of sseEvents(name)) {
    const data = /^data: (.*)$/m.exec(e)?.[1];
    if (!data || data === '[DONE]') continue;
    for (const c of (JSON.parse(data) as { choices?: { delta?: { content?: string } }[] }).choices ?? []) out += c.delta?.content ?? '';
  }
  return out.trim().slice(0, 40);
}

describe('Codex and Claude Code on the default config (simulator, no provider keys)', { timeout: 400_000, concurrency: true }, () => {
  let gw: TestGateway;
  before(async () => {
    await installAgents();
    gw = await startGateway(defaultConfigYaml(), {});
  });
  after(async () => {
    await gw?.close();
  });

  /** `request finished` lines of one client API that the model served with 200. */
  const served = (api: string, model: string) => gw.finished().filter((l) => l['api'] === api && l['model'] === model && l['status'] === 200);
  const summary = () => JSON.stringify(gw.finished().map((l) => [l['api'], l['model'], l['status'], l['error_class']]));

  test('codex exec: its default model reaches gpt-5.5-codex, the shell runs, the follow-up answers, exit 0', async () => {
    const r = await codexExec(gw.url, 'Say hello, then run a command that prints a greeting.');
    assert.equal(r.code, 0, `${tail(r)}\n${summary()}`);
    assert.ok((r.stdout + r.stderr).includes(SIMULATOR_ECHO), `the echo ran:\n${tail(r)}`);
    assert.ok(r.stdout.includes(recordedText('deepseek-reasoner-stream.sse')), `the final text is the simulator's:\n${tail(r)}`);
    const lines = served('responses', 'gpt-5.5-codex');
    assert.ok(lines.length >= 2, `two turns or more through /v1/responses: ${summary()}`);
  });

  test('claude -p: its default model reaches claude-sonnet-4.6, the Bash tool runs, the follow-up answers, exit 0', async () => {
    const r = await claudePrint(gw.url, 'Say hello, then run a command that prints a greeting.');
    assert.equal(r.code, 0, `${tail(r)}\n${summary()}`);
    assert.ok(r.stdout.includes(recordedText('openai-chat-stream-text-no-usage-2023.sse')), `the final text is the simulator's:\n${tail(r)}`);
    const lines = served('messages', 'claude-sonnet-4.6');
    assert.ok(lines.length >= 2, `two turns or more through /v1/messages: ${summary()}`);
  });
});
