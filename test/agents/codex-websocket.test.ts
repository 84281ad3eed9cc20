/**
 * The real Codex CLI over the Responses API's WebSocket mode (`supports_websockets = true`
 * in its provider config, the README's lines) on the shipped default config (the simulator):
 * `codex exec`, on its own default model, runs a task with a shell call and a follow-up
 * turn. Every Responses turn must come over the socket (each recorded with `transport:
 * websocket`, none as an HTTP POST), the first being Codex's warmup (`generate: false`,
 * answered by the gateway). The same over each single-wire account is in the account
 * scenarios (test/helpers/agent-scenarios.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { assertOverWebSocket, WEBSOCKET } from '../helpers/agent-scenarios.js';
import { codexExec, defaultConfigYaml, installAgents, SIMULATOR_ECHO, tail } from '../helpers/agents.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

describe('Codex over the Responses WebSocket, default config (simulator)', { timeout: 600_000 }, () => {
  let gw: TestGateway;
  before(async () => {
    await installAgents();
    gw = await startGateway(defaultConfigYaml(), {});
  });
  after(() => gw?.close());

  test('codex exec with supports_websockets: the shell runs, the follow-up answers, exit 0, all turns over the socket', async () => {
    const r = await codexExec(gw.url, 'Say hello, then run a command that prints a greeting.', { providerLines: WEBSOCKET });
    assert.equal(r.code, 0, tail(r));
    assert.ok((r.stdout + r.stderr).includes(SIMULATOR_ECHO), `the echo ran:\n${tail(r)}`);
    await assertOverWebSocket(gw);
  });
});
