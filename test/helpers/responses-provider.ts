/**
 * A provider that speaks only the Responses API, for the real agents (test/agents): a call
 * to the request's shell tool, then text once the tool's output is back. The call's
 * arguments come whole (in `output_item.added` and the `.done` events, no deltas), as some
 * Responses servers send them; the events' shapes are those of the recording
 * `openai-responses-stream-function-call.sse` (test/fixtures).
 */
import type { ReceivedRequest, ScriptedReply } from './fake-upstream.js';

type Obj = Record<string, unknown>;

/** The text this provider answers once the tool's output is back. */
export const RESPONSES_DONE = 'The Responses-only provider saw the tool output. Done.';

const frame = (o: Obj): string => `event: ${String(o['type'])}\ndata: ${JSON.stringify(o)}\n\n`;
const response = (status: string, output: Obj[], usage: Obj | null): Obj => ({
  id: 'resp_agent_1',
  object: 'response',
  created_at: 1,
  status,
  model: 'fake-responses',
  output,
  usage,
});
const USAGE = {
  input_tokens: 900,
  input_tokens_details: { cached_tokens: 100 },
  output_tokens: 20,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 920,
};

/** The reply to one `POST /v1/responses`: `command` run by the request's shell tool, or the final text. */
export function responsesProvider(command: string): (req: ReceivedRequest) => ScriptedReply {
  return (req) => {
    const body = req.json ?? {};
    const input = (body['input'] as Obj[] | undefined) ?? [];
    const tools = (body['tools'] as { name: string; parameters?: { properties?: Record<string, unknown> } }[] | undefined) ?? [];
    const shell = tools.find((t) => /^(bash|shell|exec_command)$/i.test(t.name));
    const steps = [frame({ type: 'response.created', response: response('in_progress', [], null) })];
    let item: Obj;
    if (!shell || input.some((i) => i['type'] === 'function_call_output')) {
      item = {
        id: 'msg_agent_1',
        type: 'message',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', annotations: [], text: RESPONSES_DONE }],
      };
      steps.push(frame({ type: 'response.output_item.added', output_index: 0, item: { ...item, status: 'in_progress', content: [] } }));
      steps.push(frame({ type: 'response.output_text.delta', item_id: 'msg_agent_1', output_index: 0, content_index: 0, delta: RESPONSES_DONE }));
    } else {
      const param = Object.keys(shell.parameters?.properties ?? {}).find((k) => /^(cmd|command)$/.test(k)) ?? 'command';
      const args = JSON.stringify({ [param]: command });
      item = { id: 'fc_agent_1', type: 'function_call', status: 'completed', arguments: args, call_id: 'call_agent_1', name: shell.name };
      steps.push(frame({ type: 'response.output_item.added', output_index: 0, item: { ...item, status: 'in_progress' } }));
      steps.push(frame({ type: 'response.function_call_arguments.done', item_id: 'fc_agent_1', output_index: 0, arguments: args }));
    }
    steps.push(frame({ type: 'response.output_item.done', output_index: 0, item }));
    steps.push(frame({ type: 'response.completed', response: response('completed', [item], USAGE) }));
    return { status: 200, headers: { 'content-type': 'text/event-stream' }, steps };
  };
}
