/**
 * Chat-completion chunks -> Responses API stream events, one chunk at a time (OpenAI API
 * reference, "Streaming events"; the event sequences of the recordings
 * `openai-responses-stream-text.sse` and `openai-responses-stream-function-call.sse`).
 *
 * - The first chunk -> `response.created`, `response.in_progress` (a preamble: held until
 *   the answer starts, so an error right after it can still fail over).
 * - `reasoning_content` / `reasoning` deltas -> a `reasoning` item: `output_item.added`,
 *   `content_part.added` (a `reasoning_text` part: the `openai` SDKs' stream accumulator
 *   needs the part before its deltas), `reasoning_text.delta` each, then
 *   `reasoning_text.done`, `content_part.done` and `output_item.done`.
 * - `content` deltas -> a `message` item: `output_item.added`, `content_part.added`,
 *   `output_text.delta` each, then `output_text.done`, `content_part.done`, `output_item.done`.
 * - `tool_calls` deltas -> one `function_call` (or `custom_tool_call`) item per chat tool-call
 *   index: `output_item.added` when its id and name come, `function_call_arguments.delta`
 *   for each argument piece (a custom tool's input comes whole at the end:
 *   `custom_tool_call_input.done`), `function_call_arguments.done` and `output_item.done`
 *   at the end of the answer (parallel calls may interleave their pieces).
 * An item is closed when an item of another kind starts; every open item is closed before
 * the final event: `response.completed`, or `response.incomplete` for a `length` or
 * `content_filter` finish, with the whole output and the usage. Every event carries its
 * `sequence_number`, from 0.
 */
import { chatReasoning } from '../../apis/chat.js';
import type { Usage } from '../../usage/usage.js';
import type { Obj } from '../read.js';
import type { StreamStep } from '../types.js';
import { callItem, customInput, type Echo, messageItem, newId, reasoningItem, responseObject, statusOf } from './output.js';

interface OpenItem {
  readonly kind: 'reasoning' | 'message' | 'call';
  readonly id: string;
  readonly outputIndex: number;
  text: string;
  /** For a call: its chat id, name and whether it is a custom tool. */
  callId?: string;
  name?: string;
  custom?: boolean;
}

export class ChatToResponsesStream {
  private seq = 0;
  private started = false;
  /** Finished output items, by output index. */
  private readonly output: Obj[] = [];
  private current: OpenItem | null = null;
  /** Chat tool-call index -> its open call item. */
  private readonly calls = new Map<number, OpenItem>();
  private finish: string | null = null;
  private model = '';
  /** Set once the final event went out. */
  private completed = false;
  done = false;

  constructor(
    private readonly r: { id: string; createdAt: number; echo: Echo; customTools: ReadonlySet<string> },
    /** The latest usage read from the stream. */
    private readonly usage: () => Usage | null,
  ) {}

  /** Whether a finish reason came (the answer is complete once the stream ends). */
  get finished(): boolean {
    return this.finish !== null;
  }

  private frame(type: string, data: Obj): Buffer {
    return Buffer.from(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: this.seq++, ...data })}\n\n`);
  }

  private response(status: 'in_progress' | 'completed' | 'incomplete', incomplete: Obj | null = null): Obj {
    return responseObject({ ...this.r, model: this.model }, { status, incomplete_details: incomplete, output: status === 'in_progress' ? [] : this.output, usage: status === 'in_progress' ? null : this.usage() });
  }

  /** One parsed chat chunk (usage and errors are read by the translator). */
  chunk(c: Obj): StreamStep {
    const frames: Buffer[] = [];
    let hold = false;
    if (!this.started) {
      this.started = true;
      if (typeof c['model'] === 'string') this.model = c['model'];
      frames.push(this.frame('response.created', { response: this.response('in_progress') }), this.frame('response.in_progress', { response: this.response('in_progress') }));
      hold = true;
    }
    let text = '';
    let reasoning = '';
    const choices = Array.isArray(c['choices']) ? c['choices'] : [];
    for (const choice of choices as Obj[]) {
      if (!choice || typeof choice !== 'object' || (choice['index'] ?? 0) !== 0) continue;
      const d = (choice['delta'] ?? {}) as Obj;
      const r = chatReasoning(d);
      if (r !== '') {
        reasoning += r;
        frames.push(...this.delta('reasoning', r));
      }
      if (typeof d['content'] === 'string' && d['content'] !== '') {
        text += d['content'];
        frames.push(...this.delta('message', d['content']));
      }
      if (Array.isArray(d['tool_calls'])) for (const call of d['tool_calls'] as Obj[]) text += this.toolDelta(call, frames);
      if (typeof choice['finish_reason'] === 'string') this.finish = choice['finish_reason'];
    }
    if (frames.length > (hold ? 2 : 0)) hold = false;
    return { ...(frames.length > 0 ? { frames } : {}), ...(hold ? { hold } : {}), ...(text ? { text } : {}), ...(reasoning ? { reasoning } : {}) };
  }

  /** A text or reasoning piece: into the open item of its kind, or a new one. */
  private delta(kind: 'reasoning' | 'message', piece: string): Buffer[] {
    const frames: Buffer[] = [];
    if (this.current?.kind !== kind) {
      frames.push(...this.closeCurrent());
      const item: OpenItem = { kind, id: newId(kind === 'reasoning' ? 'rs' : 'msg'), outputIndex: this.output.length, text: '' };
      this.current = item;
      this.output.push({}); // its place in the output, filled when it closes
      frames.push(this.frame('response.output_item.added', { output_index: item.outputIndex, item: kind === 'reasoning' ? reasoningItem(item.id, '', 'in_progress') : messageItem(item.id, '', 'in_progress') }));
      const part = kind === 'message' ? { type: 'output_text', annotations: [], logprobs: [], text: '' } : { type: 'reasoning_text', text: '' };
      frames.push(this.frame('response.content_part.added', { item_id: item.id, output_index: item.outputIndex, content_index: 0, part }));
    }
    const item = this.current!;
    item.text += piece;
    const where = { item_id: item.id, output_index: item.outputIndex, content_index: 0 };
    frames.push(kind === 'reasoning' ? this.frame('response.reasoning_text.delta', { ...where, delta: piece }) : this.frame('response.output_text.delta', { ...where, delta: piece, logprobs: [] }));
    return frames;
  }

  /** One entry of a delta's `tool_calls`; returns its generated text. */
  private toolDelta(call: Obj, frames: Buffer[]): string {
    const index = typeof call['index'] === 'number' ? call['index'] : 0;
    const fn = (call['function'] ?? {}) as Obj;
    let item = this.calls.get(index);
    if (!item) {
      frames.push(...this.closeCurrent());
      const name = typeof fn['name'] === 'string' ? fn['name'] : '';
      item = { kind: 'call', id: newId(this.r.customTools.has(name) ? 'ctc' : 'fc'), outputIndex: this.output.length, text: '', callId: typeof call['id'] === 'string' && call['id'] !== '' ? call['id'] : newId('call'), name, custom: this.r.customTools.has(name) };
      this.calls.set(index, item);
      this.output.push({});
      frames.push(this.frame('response.output_item.added', { output_index: item.outputIndex, item: callItem(item.id, { callId: item.callId!, name, args: '' }, item.custom!, 'in_progress') }));
    }
    const args = typeof fn['arguments'] === 'string' ? fn['arguments'] : '';
    if (args === '') return typeof fn['name'] === 'string' ? fn['name'] : '';
    item.text += args;
    if (!item.custom) frames.push(this.frame('response.function_call_arguments.delta', { item_id: item.id, output_index: item.outputIndex, delta: args }));
    return (typeof fn['name'] === 'string' ? fn['name'] : '') + args;
  }

  private closeCurrent(): Buffer[] {
    const item = this.current;
    if (!item) return [];
    this.current = null;
    const where = { item_id: item.id, output_index: item.outputIndex, content_index: 0 };
    if (item.kind === 'reasoning') {
      const done = reasoningItem(item.id, item.text, 'completed');
      this.output[item.outputIndex] = done;
      return [
        this.frame('response.reasoning_text.done', { ...where, text: item.text }),
        this.frame('response.content_part.done', { ...where, part: (done['content'] as Obj[])[0] }),
        this.frame('response.output_item.done', { output_index: item.outputIndex, item: done }),
      ];
    }
    const done = messageItem(item.id, item.text, 'completed');
    this.output[item.outputIndex] = done;
    return [
      this.frame('response.output_text.done', { ...where, text: item.text, logprobs: [] }),
      this.frame('response.content_part.done', { ...where, part: (done['content'] as Obj[])[0] }),
      this.frame('response.output_item.done', { output_index: item.outputIndex, item: done }),
    ];
  }

  private closeCalls(): Buffer[] {
    const frames: Buffer[] = [];
    for (const item of this.calls.values()) {
      const args = item.text === '' ? '{}' : item.text;
      const done = callItem(item.id, { callId: item.callId!, name: item.name!, args }, item.custom!, 'completed');
      this.output[item.outputIndex] = done;
      if (item.custom) frames.push(this.frame('response.custom_tool_call_input.done', { item_id: item.id, output_index: item.outputIndex, input: customInput(args) }));
      else frames.push(this.frame('response.function_call_arguments.done', { item_id: item.id, output_index: item.outputIndex, arguments: args }));
      frames.push(this.frame('response.output_item.done', { output_index: item.outputIndex, item: done }));
    }
    this.calls.clear();
    return frames;
  }

  /** The response's id and output once it completed, else null. */
  answer(): { id: string; output: readonly Obj[] } | null {
    return this.completed ? { id: this.r.id, output: this.output } : null;
  }

  /** The end of the answer: every open item closed, then the final event. */
  complete(): StreamStep {
    this.done = true;
    this.completed = true;
    const frames = [...this.closeCurrent(), ...this.closeCalls()];
    const { status, incomplete_details } = statusOf(this.finish);
    frames.push(this.frame(status === 'completed' ? 'response.completed' : 'response.incomplete', { response: this.response(status, incomplete_details) }));
    return { frames };
  }
}
