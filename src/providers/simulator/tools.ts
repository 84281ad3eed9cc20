/**
 * The simulator's tool calls: an agent's tool loop runs against it, so a call it makes must
 * name a tool the request declared, with arguments that fit that tool's JSON schema, and a
 * turn that already sends tool results back is answered with text (the loop ends).
 *
 * The frames follow the recorded OpenAI tool-call stream
 * (`recordings/openai-chat-stream-parallel-tool-calls.sse`): a chunk with the call's id,
 * type and name and empty arguments, the arguments in pieces, a chunk with
 * `finish_reason: "tool_calls"`, the usage chunk (only with `include_usage`), `[DONE]`; the
 * recording's `id`, `created` and `model` label them. When the request declares the tools
 * the recording itself calls, the recording is replayed as it is. Otherwise which tool: a
 * shell tool when one is declared (Codex's `shell` / `exec_command`, Claude Code's `Bash`: a
 * harmless `echo`), else Codex's code-mode `exec` (JavaScript running the same `echo`
 * through its nested shell tool, see code-mode.ts), else the first function tool.
 */
import { randomBytes } from 'node:crypto';
import { codeModeInput, isCodeModeExec } from './code-mode.js';
import type { StreamRecording } from './recordings.js';

type Obj = Record<string, unknown>;

/** The command a shell tool is called with. */
const ECHO = ['echo', 'hello from the switchyard simulator'];
const SHELL = /^(shell|exec_command|bash|local_shell|run_shell_command|terminal)$/i;

export interface PlannedCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A value that fits `schema` (the declared type, its first enum value, required properties filled). */
function valueFor(schema: unknown, name: string, depth = 0): unknown {
  if (!isObj(schema) || depth > 6) return '';
  if (Array.isArray(schema['enum']) && schema['enum'].length > 0) return schema['enum'][0];
  if (schema['const'] !== undefined) return schema['const'];
  const alt = schema['anyOf'] ?? schema['oneOf'];
  if (Array.isArray(alt) && alt.length > 0) return valueFor(alt[0], name, depth + 1);
  const type = Array.isArray(schema['type']) ? schema['type'][0] : schema['type'];
  switch (type) {
    case 'object': {
      const props = isObj(schema['properties']) ? schema['properties'] : {};
      const required = Array.isArray(schema['required']) ? (schema['required'] as unknown[]).filter((k): k is string => typeof k === 'string') : [];
      const out: Obj = {};
      for (const k of required) out[k] = valueFor(props[k], k, depth + 1);
      return out;
    }
    case 'array':
      return /command|cmd|argv/i.test(name) ? ECHO : [];
    case 'integer':
    case 'number':
      return typeof schema['minimum'] === 'number' ? schema['minimum'] : 0;
    case 'boolean':
      return false;
    default:
      return /command|cmd/i.test(name) ? ECHO.join(' ') : /path|file|dir/i.test(name) ? '.' : 'switchyard';
  }
}

/** The declared function tools: name, parameter schema and description. */
function functionTools(tools: unknown): { name: string; parameters: unknown; description: unknown }[] {
  const out: { name: string; parameters: unknown; description: unknown }[] = [];
  for (const t of Array.isArray(tools) ? tools : []) {
    const fn = isObj(t) && t['type'] === 'function' && isObj(t['function']) ? t['function'] : undefined;
    if (fn && typeof fn['name'] === 'string') out.push({ name: fn['name'], parameters: fn['parameters'], description: fn['description'] });
  }
  return out;
}

/**
 * The tool call to answer a request with, or null: no function tool declared, a forced
 * `tool_choice: none`, or the last message is already a tool result (the turn gets text).
 */
export function planToolCall(body: { tools?: unknown; tool_choice?: unknown; messages?: unknown }): PlannedCall | null {
  if (body.tool_choice === 'none') return null;
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const last = messages[messages.length - 1];
  if (isObj(last) && last['role'] === 'tool') return null;
  const tools = functionTools(body.tools);
  const forced = isObj(body.tool_choice) && isObj(body.tool_choice['function']) ? body.tool_choice['function']['name'] : undefined;
  const tool = tools.find((t) => t.name === forced) ?? tools.find((t) => SHELL.test(t.name)) ?? tools.find(isCodeModeExec) ?? tools[0];
  if (!tool) return null;
  const args = isCodeModeExec(tool) ? { input: codeModeInput(String(tool.description), ECHO) } : valueFor(tool.parameters ?? { type: 'object' }, tool.name);
  return { id: `call_${randomBytes(12).toString('base64url')}`, name: tool.name, arguments: JSON.stringify(args) };
}

/** Whether the request declares every tool the recording calls (then the recording itself is the answer). */
export function recordingFits(rec: StreamRecording, tools: unknown): boolean {
  const declared = new Set(functionTools(tools).map((t) => t.name));
  return rec.toolNames.length > 0 && rec.toolNames.every((n) => declared.has(n));
}

/**
 * The streamed frames of a call, labelled like `rec` (see the file comment), after the
 * recording's reasoning deltas (a reasoning model thinks before it calls).
 */
export function toolCallEvents(call: PlannedCall, rec: StreamRecording, wantsUsage: boolean, promptTokens: number): Buffer[] {
  const base = { id: rec.meta.id, object: 'chat.completion.chunk', created: rec.meta.created, model: rec.meta.model };
  const frame = (o: Obj): Buffer => Buffer.from(`data: ${JSON.stringify({ ...base, ...o })}\n\n`);
  const choice = (delta: Obj, finish: string | null = null): Obj => ({ choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
  const out = [
    ...rec.reasoningEvents,
    frame(
      choice({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }),
    ),
  ];
  for (let i = 0; i < call.arguments.length; i += 16)
    out.push(frame(choice({ tool_calls: [{ index: 0, function: { arguments: call.arguments.slice(i, i + 16) } }] })));
  out.push(frame(choice({}, 'tool_calls')));
  const completion = Math.max(1, Math.ceil(call.arguments.length / 4));
  if (wantsUsage)
    out.push(frame({ choices: [], usage: { prompt_tokens: promptTokens, completion_tokens: completion, total_tokens: promptTokens + completion } }));
  out.push(Buffer.from('data: [DONE]\n\n'));
  return out;
}

/** The JSON answer of a call, in the shape of the recorded chat completion. */
export function toolCallJson(call: PlannedCall, template: Buffer, promptTokens: number): Buffer {
  const t = JSON.parse(template.toString('utf8')) as Obj;
  const completion = Math.max(1, Math.ceil(call.arguments.length / 4));
  const message = {
    role: 'assistant',
    content: null,
    refusal: null,
    tool_calls: [{ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }],
  };
  return Buffer.from(
    JSON.stringify({
      ...t,
      choices: [{ index: 0, message, logprobs: null, finish_reason: 'tool_calls' }],
      usage: { prompt_tokens: promptTokens, completion_tokens: completion, total_tokens: promptTokens + completion },
    }),
  );
}
