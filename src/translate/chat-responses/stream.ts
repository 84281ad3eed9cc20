/**
 * Responses API stream events -> OpenAI `chat.completion.chunk` frames, one event at a time
 * (OpenAI API reference, "Streaming events"; recordings `openai-responses-stream-*`).
 *
 * - `response.created` -> the first chunk, delta `{role:'assistant', content:''}` (a
 *   preamble: held until the answer starts, so an error right after it can still fail over).
 * - `output_text.delta` -> `delta.content`; `refusal.delta` -> `delta.refusal`;
 *   `reasoning_summary_text.delta` / `reasoning_text.delta` -> `delta.reasoning_content`.
 * - A `function_call` item's `output_item.added` -> a `tool_calls` entry with its own
 *   `index` (counting the response's function calls from 0), `id` (the call id), name and
 *   the arguments the item already holds (usually none); its
 *   `function_call_arguments.delta`s -> argument pieces. A server that sends the arguments
 *   whole (in `output_item.added`, or only in `function_call_arguments.done` /
 *   `output_item.done`) gets them from whichever event carries them first, never twice; a
 *   call first seen in its `output_item.done` gets its entry there.
 * - `response.completed` / `response.incomplete` -> a chunk with the `finish_reason`, the
 *   usage chunk (only when the client asked for it), `[DONE]`.
 * Every chunk carries the response's id, `created` and model. Failures (`error`,
 * `response.failed`) are the translator's to read.
 */
import { isObj, NOTHING, type Obj } from '../read.js';
import type { StreamStep } from '../types.js';
import { chatUsage, finishOf } from './response.js';
import { asText } from '../../util/as-text.js';

const DONE = Buffer.from('data: [DONE]\n\n');

export class ResponsesToChatStream {
  private id = '';
  private model = '';
  private created = 0;
  /** Output index -> the chat tool-call index of a function call item, and whether its arguments went out. */
  private readonly calls = new Map<number, { index: number; sent: boolean }>();
  done = false;

  constructor(private readonly wantsUsage: boolean) {}

  /** One parsed event (`type` read). */
  event(type: string | null, obj: Obj): StreamStep {
    const delta = typeof obj['delta'] === 'string' ? obj['delta'] : '';
    switch (type) {
      case 'response.created': {
        const r = isObj(obj['response']) ? obj['response'] : {};
        this.id = asText(r['id'] ?? '');
        this.model = asText(r['model'] ?? '');
        this.created = typeof r['created_at'] === 'number' ? r['created_at'] : Math.floor(Date.now() / 1000);
        return { frames: [this.chunk({ role: 'assistant', content: '' })], hold: true };
      }
      case 'response.output_text.delta':
        return delta ? { frames: [this.chunk({ content: delta })], text: delta } : NOTHING;
      case 'response.refusal.delta':
        return delta ? { frames: [this.chunk({ refusal: delta })], text: delta } : NOTHING;
      case 'response.reasoning_summary_text.delta':
      case 'response.reasoning_text.delta':
        return delta ? { frames: [this.chunk({ reasoning_content: delta })], reasoning: delta } : NOTHING;
      case 'response.output_item.added':
      case 'response.output_item.done': {
        const item = isObj(obj['item']) ? obj['item'] : {};
        if (item['type'] !== 'function_call' || typeof obj['output_index'] !== 'number') return NOTHING;
        const args = typeof item['arguments'] === 'string' ? item['arguments'] : '';
        return this.calls.has(obj['output_index']) ? this.wholeArgs(obj['output_index'], args) : this.newCall(obj['output_index'], item, args);
      }
      case 'response.function_call_arguments.delta': {
        const call = typeof obj['output_index'] === 'number' ? this.calls.get(obj['output_index']) : undefined;
        if (call === undefined || !delta) return NOTHING;
        call.sent = true;
        return { frames: [this.chunk({ tool_calls: [{ index: call.index, function: { arguments: delta } }] })], text: delta };
      }
      case 'response.function_call_arguments.done':
        return typeof obj['output_index'] === 'number' && typeof obj['arguments'] === 'string'
          ? this.wholeArgs(obj['output_index'], obj['arguments'])
          : NOTHING;
      case 'response.completed':
      case 'response.incomplete':
        return this.finish(isObj(obj['response']) ? obj['response'] : {});
      default:
        return NOTHING;
    }
  }

  /** A function call's first event: its `tool_calls` entry, with the arguments it carries. */
  private newCall(outputIndex: number, item: Obj, args: string): StreamStep {
    const index = this.calls.size;
    this.calls.set(outputIndex, { index, sent: args !== '' });
    const name = asText(item['name'] ?? '');
    const call = { index, id: asText(item['call_id'] ?? ''), type: 'function', function: { name, arguments: args } };
    return { frames: [this.chunk({ tool_calls: [call] })], text: name + args };
  }

  /** A call's whole arguments (`.done`, or an item added with them): sent only when no piece of them was. */
  private wholeArgs(outputIndex: number, args: string): StreamStep {
    const call = this.calls.get(outputIndex);
    if (!call || call.sent || args === '') return NOTHING;
    call.sent = true;
    return { frames: [this.chunk({ tool_calls: [{ index: call.index, function: { arguments: args } }] })], text: args };
  }

  private finish(response: Obj): StreamStep {
    this.done = true;
    const frames = [this.chunk({}, finishOf(response, this.calls.size > 0))];
    const usage = chatUsage(response['usage']);
    if (usage && this.wantsUsage) frames.push(this.frame({ ...this.base(), choices: [], usage }));
    frames.push(DONE);
    return { frames, done: true };
  }

  private base(): Obj {
    return { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model };
  }

  private chunk(delta: Obj, finish: string | null = null): Buffer {
    return this.frame({ ...this.base(), choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
  }

  private frame(o: Obj): Buffer {
    return Buffer.from(`data: ${JSON.stringify(o)}\n\n`);
  }
}
