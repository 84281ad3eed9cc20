/**
 * Fake provider accounts for the agent scenarios, one per wire API, each scripted like a
 * model that uses the agent's shell: the first turn calls the shell tool the request offers
 * (an `echo`), a turn whose last input is that tool's output is answered with text. Written
 * from the API references, independently of src/ (no import of the gateway's translators):
 * - chat completions: a streamed `tool_calls` delta, then `finish_reason: "tool_calls"`;
 * - Responses: a `function_call` item, or a `custom_tool_call` for a custom tool (Codex's
 *   code-mode `exec`, which may arrive in an `additional_tools` input item's `namespace`
 *   groups), with the `response.*` events of the recorded streams;
 * - Messages: a `tool_use` block with `input_json_delta`s, `stop_reason: "tool_use"`.
 * Which tool: a shell (`exec_command`, `shell`, `Bash`…) with `cmd` / `command` (a string, or
 * argv when the schema says array), else a code-mode `exec` (a custom tool, or a function
 * taking one string `input`) with JavaScript calling the nested `exec_command` (the nested
 * shell of Codex 0.171.0, see test/captures/codex-0.171.0-exec-tool.json).
 */
import type { ReceivedRequest, ScriptedReply } from './fake-upstream.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** What the fake accounts' shell call prints. */
export const ACCOUNT_ECHO = 'hello from the fake account';

export type WireApi = 'chat' | 'responses' | 'messages';

/** The text a fake account answers with once it saw the tool's output. */
export const doneText = (wire: WireApi): string => `The ${wire} account saw the tool output. Done.`;

interface OfferedTool {
  name: string;
  custom: boolean;
  schema: unknown;
}

/** The tools a request offers, on its wire API (Responses namespaces and `additional_tools` flattened). */
function offered(wire: WireApi, body: Obj): OfferedTool[] {
  if (wire === 'chat')
    return arr(body['tools'])
      .filter(isObj)
      .map((t) => (isObj(t['function']) ? t['function'] : {}))
      .map((f) => ({ name: String(f['name']), custom: false, schema: f['parameters'] }));
  if (wire === 'messages')
    return arr(body['tools'])
      .filter(isObj)
      .map((t) => ({ name: String(t['name']), custom: false, schema: t['input_schema'] }));
  const out: OfferedTool[] = [];
  const add = (tools: unknown[]): void => {
    for (const t of tools.filter(isObj)) {
      if (t['type'] === 'namespace') add(arr(t['tools']));
      else if (t['type'] === 'function' || t['type'] === 'custom')
        out.push({ name: String(t['name']), custom: t['type'] === 'custom', schema: t['parameters'] });
    }
  };
  add(arr(body['tools']));
  for (const item of arr(body['input']).filter(isObj)) if (item['type'] === 'additional_tools') add(arr(item['tools']));
  return out;
}

const propsOf = (schema: unknown): Obj => (isObj(schema) && isObj(schema['properties']) ? schema['properties'] : {});

/** The shell call to make: the tool, and its arguments (an object) or its raw input (a custom tool). */
function shellCall(tools: OfferedTool[]): { name: string; args?: Obj; input?: string } | null {
  const command = `echo ${ACCOUNT_ECHO}`;
  const shell = tools.find((t) => /^(exec_command|shell|bash|local_shell)$/i.test(t.name));
  if (shell) {
    const param = Object.keys(propsOf(shell.schema)).find((k) => /^(cmd|command)$/.test(k)) ?? 'command';
    const value = (propsOf(shell.schema)[param] as Obj | undefined)?.['type'] === 'array' ? ['echo', ACCOUNT_ECHO] : command;
    return { name: shell.name, args: { [param]: value } };
  }
  const exec = tools.find((t) => /(^|[^A-Za-z0-9])exec$/.test(t.name) && (t.custom || Object.keys(propsOf(t.schema)).join() === 'input'));
  if (!exec) return null;
  const js = `text(await tools.exec_command({ cmd: ${JSON.stringify(command)} }));`;
  return exec.custom ? { name: exec.name, input: js } : { name: exec.name, args: { input: js } };
}

/** The tool output a follow-up turn carries (the last input, when it is one), as text; null on a first turn. */
export function toolOutput(wire: WireApi, body: Obj): string | null {
  if (wire === 'chat') {
    const last = arr(body['messages']).at(-1);
    return isObj(last) && last['role'] === 'tool' ? JSON.stringify(last['content']) : null;
  }
  if (wire === 'responses') {
    const last = arr(body['input']).at(-1);
    return isObj(last) && (last['type'] === 'function_call_output' || last['type'] === 'custom_tool_call_output') ? JSON.stringify(last['output']) : null;
  }
  const last = arr(body['messages']).at(-1);
  const results = isObj(last) && last['role'] === 'user' ? arr(last['content']).filter((b) => isObj(b) && b['type'] === 'tool_result') : [];
  return results.length > 0 ? JSON.stringify(results) : null;
}

/**
 * A streamed answer whose body ends 300 ms after its last event, so an agent that closes its
 * connection on the terminal event (Codex CLI on `response.completed`) leaves before the
 * upstream is done: the turn must still be booked complete (issue 29).
 */
const sse = (frames: string[]): ScriptedReply => ({ status: 200, headers: { 'content-type': 'text/event-stream' }, steps: [...frames, { delayMs: 300 }] });
const event = (type: string, data: Obj): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

function chatReply(call: ReturnType<typeof shellCall>, text: string): ScriptedReply {
  const chunk = (delta: Obj, finish: string | null = null, usage?: Obj): string =>
    `data: ${JSON.stringify({ id: 'chatcmpl-agent', object: 'chat.completion.chunk', created: 1, model: 'fake', choices: usage ? [] : [{ index: 0, delta, finish_reason: finish }], ...(usage ? { usage } : {}) })}\n\n`;
  const usage = chunk({}, null, { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 });
  if (!call) return sse([chunk({ role: 'assistant', content: '' }), chunk({ content: text }), chunk({}, 'stop'), usage, 'data: [DONE]\n\n']);
  const fn = { index: 0, id: 'call_agent_1', type: 'function', function: { name: call.name, arguments: '' } };
  return sse([
    chunk({ role: 'assistant', content: null, tool_calls: [fn] }),
    chunk({ tool_calls: [{ index: 0, function: { arguments: JSON.stringify(call.args) } }] }),
    chunk({}, 'tool_calls'),
    usage,
    'data: [DONE]\n\n',
  ]);
}

function responsesReply(call: ReturnType<typeof shellCall>, text: string, model: unknown): ScriptedReply {
  let seq = 0;
  const ev = (type: string, data: Obj): string => event(type, { sequence_number: seq++, ...data });
  const response = (status: string, output: Obj[]): Obj => ({
    id: 'resp_agent',
    object: 'response',
    created_at: 1,
    status,
    model,
    output,
    usage:
      status === 'completed'
        ? {
            input_tokens: 100,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens: 10,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: 110,
          }
        : null,
  });
  const frames = [ev('response.created', { response: response('in_progress', []) })];
  let item: Obj;
  if (!call) {
    item = { type: 'message', id: 'msg_agent', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] };
    const at = { item_id: 'msg_agent', output_index: 0, content_index: 0 };
    frames.push(
      ev('response.output_item.added', { output_index: 0, item: { ...item, status: 'in_progress', content: [] } }),
      ev('response.content_part.added', { ...at, part: { type: 'output_text', text: '', annotations: [] } }),
    );
    frames.push(
      ev('response.output_text.delta', { ...at, delta: text }),
      ev('response.output_text.done', { ...at, text }),
      ev('response.content_part.done', { ...at, part: (item['content'] as Obj[])[0]! }),
    );
  } else if (call.input !== undefined) {
    item = { type: 'custom_tool_call', id: 'ctc_agent', status: 'completed', call_id: 'call_agent_1', name: call.name, input: call.input };
    frames.push(ev('response.output_item.added', { output_index: 0, item: { ...item, status: 'in_progress', input: '' } }));
    frames.push(
      ev('response.custom_tool_call_input.delta', { item_id: 'ctc_agent', output_index: 0, delta: call.input }),
      ev('response.custom_tool_call_input.done', { item_id: 'ctc_agent', output_index: 0, input: call.input }),
    );
  } else {
    const args = JSON.stringify(call.args);
    item = { type: 'function_call', id: 'fc_agent', status: 'completed', call_id: 'call_agent_1', name: call.name, arguments: args };
    frames.push(ev('response.output_item.added', { output_index: 0, item: { ...item, status: 'in_progress', arguments: '' } }));
    frames.push(
      ev('response.function_call_arguments.delta', { item_id: 'fc_agent', output_index: 0, delta: args }),
      ev('response.function_call_arguments.done', { item_id: 'fc_agent', output_index: 0, arguments: args }),
    );
  }
  frames.push(ev('response.output_item.done', { output_index: 0, item }), ev('response.completed', { response: response('completed', [item]) }));
  return sse(frames);
}

function messagesReply(call: ReturnType<typeof shellCall>, text: string, model: unknown): ScriptedReply {
  const frames = [
    event('message_start', {
      message: {
        id: 'msg_agent',
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 100, output_tokens: 1 },
      },
    }),
  ];
  if (!call) {
    frames.push(
      event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
      event('content_block_delta', { index: 0, delta: { type: 'text_delta', text } }),
    );
  } else {
    const input = call.args ?? { input: call.input };
    frames.push(event('content_block_start', { index: 0, content_block: { type: 'tool_use', id: 'toolu_agent_1', name: call.name, input: {} } }));
    frames.push(event('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: JSON.stringify(input) } }));
  }
  frames.push(
    event('content_block_stop', { index: 0 }),
    event('message_delta', { delta: { stop_reason: call ? 'tool_use' : 'end_turn', stop_sequence: null }, usage: { output_tokens: 10 } }),
    event('message_stop', {}),
  );
  return sse(frames);
}

/**
 * The script of a fake account speaking `wire`: a shell call on a first turn, text on a
 * follow-up (or when no shell is offered, or with `textOnly`). Streams only: both agents
 * stream every turn.
 */
export function agentAccount(wire: WireApi, o: { textOnly?: boolean } = {}): (req: ReceivedRequest) => ScriptedReply {
  return (req) => {
    const body = req.json ?? {};
    const call = !o.textOnly && toolOutput(wire, body) === null ? shellCall(offered(wire, body)) : null;
    if (wire === 'chat') return chatReply(call, doneText(wire));
    if (wire === 'responses') return responsesReply(call, doneText(wire), body['model']);
    return messagesReply(call, doneText(wire), body['model']);
  };
}

/** The follow-ups `requests` hold for upstream model `model`: the tool output each carried. */
export function followUps(wire: WireApi, requests: readonly ReceivedRequest[], model: string): string[] {
  return requests
    .filter((r) => r.json?.['model'] === model)
    .map((r) => toolOutput(wire, r.json ?? {}))
    .filter((o): o is string => o !== null);
}
