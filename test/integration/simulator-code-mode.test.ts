/**
 * The simulator's shell call for Codex's "code mode" (providers/simulator/code-mode.ts): a
 * request whose only way to a shell is the custom tool `exec` (JavaScript calling nested
 * tools, its description copied from a captured `codex exec` 0.171.0 request) gets a call
 * whose input is JavaScript running a harmless echo through the nested `exec_command`, on
 * the default config with no provider keys: through `/v1/responses` (a `custom` tool, which
 * the bridge offers the simulator as a function taking one string `input`) and through
 * `/v1/chat/completions` (that function as a bridge sends it, under namespaced names too).
 * The JavaScript is run against stand-ins of `tools` and `text` to check what it does.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { buildApp, type Gateway } from '../../src/app.js';
import { parseTestConfig } from '../helpers/config.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const DEMO_KEY = 'sk-switchyard-demo';

/** Codex's `exec` tool as captured (test/captures: client requests, not provider answers): a Responses `custom` tool with a grammar format. */
const EXEC = (
  JSON.parse(readFileSync(join(ROOT, 'test', 'captures', 'codex-0.171.0-exec-tool.json'), 'utf8')) as {
    tool: { type: string; name: string; description: string; format: unknown };
  }
).tool;

/** The parameters a bridge offers a custom tool as (one string `input`). */
const INPUT_ONLY = { type: 'object', properties: { input: { type: 'string' } }, required: ['input'], additionalProperties: false };

type Call = { name: string; args: unknown };

/** Runs the code-mode JavaScript with stand-ins for the nested tools and `text`; what it called and showed. */
async function runExecInput(js: string): Promise<{ calls: Call[]; shown: unknown[] }> {
  const calls: Call[] = [];
  const shown: unknown[] = [];
  const tools = new Proxy(
    {},
    { get: (_t, name) => async (args: unknown) => (calls.push({ name: String(name), args }), { output: 'stand-in output\n', exit_code: 0 }) },
  );
  const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...a: string[]) => (...v: unknown[]) => Promise<void>;
  await new AsyncFunction('tools', 'text', js)(tools, (v: unknown) => shown.push(v));
  return { calls, shown };
}

describe("the simulator calls Codex's code-mode exec with JavaScript that runs echo", () => {
  let gw: Gateway;
  let url: string;
  before(async () => {
    const yaml = readFileSync(join(ROOT, 'config', 'switchyard.yaml'), 'utf8')
      .replace(/chunk_delay_ms: 20\b/, 'chunk_delay_ms: 1')
      .replace(/first_byte_delay_ms: 150\b/, 'first_byte_delay_ms: 1');
    gw = await buildApp(parseTestConfig(yaml, {}, 'switchyard.yaml'), { logStream: { write: () => true } as unknown as NodeJS.WritableStream });
    url = await gw.app.listen({ host: '127.0.0.1', port: 0 });
  });
  after(() => gw.app.close());

  const post = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
    const res = await fetch(`${url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${DEMO_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const json = (await res.json()) as Record<string, unknown>;
    assert.equal(res.status, 200, JSON.stringify(json));
    return json;
  };

  async function assertEchoes(js: string): Promise<void> {
    const { calls, shown } = await runExecInput(js);
    assert.deepEqual(calls, [{ name: 'exec_command', args: { cmd: 'echo hello from the switchyard simulator' } }], js);
    assert.equal(shown.length, 1, `the result is shown with text(): ${js}`);
  }

  test('/v1/responses with the custom tool: a custom_tool_call whose input is the JavaScript', async () => {
    const body = await post('/v1/responses', { model: 'gpt-5.5-codex', input: 'Run a command that prints a greeting.', tools: [EXEC] });
    const call = (body['output'] as { type: string; name?: string; input?: string }[]).find((o) => o.type === 'custom_tool_call');
    assert.ok(call, JSON.stringify(body['output']));
    assert.equal(call.name, 'exec');
    await assertEchoes(call.input!);
  });

  for (const name of ['exec', 'functions.exec', 'functions__exec']) {
    test(`/v1/chat/completions with the function "${name}" taking one string input`, async () => {
      const tools = [
        {
          type: 'function',
          function: {
            name: 'wait',
            description: 'Waits on a yielded `exec` cell.',
            parameters: { type: 'object', properties: { cell_id: { type: 'string' } }, required: ['cell_id'] },
          },
        },
        { type: 'function', function: { name, description: EXEC.description, parameters: INPUT_ONLY } },
      ];
      const body = await post('/v1/chat/completions', {
        model: 'gpt-6.2-sol',
        messages: [{ role: 'user', content: 'Run a command that prints a greeting.' }],
        tools,
      });
      const call = (body['choices'] as { message: { tool_calls: { function: { name: string; arguments: string } }[] } }[])[0]!.message.tool_calls[0]!;
      assert.equal(call.function.name, name);
      await assertEchoes((JSON.parse(call.function.arguments) as { input: string }).input);
    });
  }

  test('an exec function that is not code mode (its own parameters) gets arguments that fit its schema', async () => {
    const tools = [
      {
        type: 'function',
        function: {
          name: 'exec',
          description: 'Run a program.',
          parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
        },
      },
    ];
    const body = await post('/v1/chat/completions', { model: 'gpt-5.5-codex', messages: [{ role: 'user', content: 'x' }], tools });
    const call = (body['choices'] as { message: { tool_calls: { function: { arguments: string } }[] } }[])[0]!.message.tool_calls[0]!;
    assert.deepEqual(JSON.parse(call.function.arguments), { command: 'echo hello from the switchyard simulator' });
  });
});
