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
 *   index, named back from the wire name (`../responses-tools.ts`: its namespace, custom or
 *   not): `output_item.added` when its id and name come, `function_call_arguments.delta`
 *   for each argument piece (a custom tool's input comes whole at the end, read from the
 *   function's `{"input"}` argument: `custom_tool_call_input.delta` and `.done`),
 *   `function_call_arguments.done` and `output_item.done` at the end of the answer
 *   (parallel calls may interleave their pieces).
 * An item is closed when an item of another kind starts; every open item is closed before
 * the final event: `response.completed`, or `response.incomplete` for a `length` or
 * `content_filter` finish, with the whole output and the usage (a step marked `done`). The
 * events themselves are written by `../responses-emitter.ts`.
 */
import { chatReasoning } from '../../apis/chat.js';
import type { Usage } from '../../usage/usage.js';
import { isObj, type Obj } from '../read.js';
import { ResponsesEmitter, type OpenItem } from '../responses-emitter.js';
import { customInput, type Echo, newId, responseObject } from '../responses-output.js';
import type { ResponsesTools } from '../responses-tools.js';
import type { StreamStep } from '../types.js';
import { statusOf } from './output.js';

export class ChatToResponsesStream {
  private readonly out = new ResponsesEmitter();
  private started = false;
  /** The open reasoning or message item. */
  private current: OpenItem | null = null;
  /** Chat tool-call index -> its open call item. */
  private readonly calls = new Map<number, OpenItem>();
  private finish: string | null = null;
  private model = '';
  /** Set once the final event went out. */
  private completed = false;
  done = false;

  constructor(
    private readonly r: { id: string; createdAt: number; echo: Echo; tools: ResponsesTools },
    /** The latest usage read from the stream. */
    private readonly usage: () => Usage | null,
  ) {}

  /** Whether a finish reason came (the answer is complete once the stream ends). */
  get finished(): boolean {
    return this.finish !== null;
  }

  private response(status: 'in_progress' | 'completed' | 'incomplete', incomplete: Obj | null = null): Obj {
    const done = status !== 'in_progress';
    return responseObject(
      { ...this.r, model: this.model },
      { status, incomplete_details: incomplete, output: done ? this.out.output : [], usage: done ? this.usage() : null },
    );
  }

  /** One parsed chat chunk (usage and errors are read by the translator). */
  chunk(c: Obj): StreamStep {
    const frames: Buffer[] = [];
    let hold = false;
    if (!this.started) {
      this.started = true;
      if (typeof c['model'] === 'string') this.model = c['model'];
      frames.push(
        this.out.frame('response.created', { response: this.response('in_progress') }),
        this.out.frame('response.in_progress', { response: this.response('in_progress') }),
      );
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
        this.delta('reasoning', r, frames);
      }
      if (typeof d['content'] === 'string' && d['content'] !== '') {
        text += d['content'];
        this.delta('message', d['content'], frames);
      }
      // An entry that is not an object (`null`) carries nothing: skipped, not read.
      if (Array.isArray(d['tool_calls'])) for (const call of (d['tool_calls'] as unknown[]).filter(isObj)) text += this.toolDelta(call, frames);
      if (typeof choice['finish_reason'] === 'string') this.finish = choice['finish_reason'];
    }
    if (frames.length > (hold ? 2 : 0)) hold = false;
    return { ...(frames.length > 0 ? { frames } : {}), ...(hold ? { hold } : {}), ...(text ? { text } : {}), ...(reasoning ? { reasoning } : {}) };
  }

  /** A text or reasoning piece: into the open item of its kind, or a new one. */
  private delta(kind: 'reasoning' | 'message', piece: string, frames: Buffer[]): void {
    if (this.current?.kind !== kind) {
      this.closeCurrent(frames);
      this.current = this.out.open(kind, frames);
    }
    this.out.delta(this.current, piece, frames);
  }

  /** One entry of a delta's `tool_calls`; returns its generated text. */
  private toolDelta(call: Obj, frames: Buffer[]): string {
    const index = typeof call['index'] === 'number' ? call['index'] : 0;
    const fn = (call['function'] ?? {}) as Obj;
    const name = typeof fn['name'] === 'string' ? fn['name'] : '';
    let item = this.calls.get(index);
    if (!item) {
      this.closeCurrent(frames);
      const tool = this.r.tools.back(name);
      const callId = typeof call['id'] === 'string' && call['id'] !== '' ? call['id'] : newId('call');
      item = this.out.open('call', frames, { callId, name: tool.name, namespace: tool.namespace, custom: tool.kind === 'custom' });
      this.calls.set(index, item);
    }
    const args = typeof fn['arguments'] === 'string' ? fn['arguments'] : '';
    if (args === '') return name;
    // A custom tool's input is read from the whole arguments at the end.
    if (item.call!.custom) item.text += args;
    else this.out.delta(item, args, frames);
    return name + args;
  }

  private closeCurrent(frames: Buffer[]): void {
    if (!this.current) return;
    this.out.close(this.current, frames);
    this.current = null;
  }

  private closeCalls(frames: Buffer[]): void {
    for (const item of this.calls.values()) {
      const args = item.text === '' ? '{}' : item.text;
      this.out.close(item, frames, item.call!.custom ? customInput(args) : args);
    }
    this.calls.clear();
  }

  /** The response's id and output once it completed, else null. */
  answer(): { id: string; output: readonly Obj[] } | null {
    return this.completed ? { id: this.r.id, output: this.out.output } : null;
  }

  /** The end of the answer: every open item closed, then the final event. */
  complete(): StreamStep {
    this.done = true;
    this.completed = true;
    const frames: Buffer[] = [];
    this.closeCurrent(frames);
    this.closeCalls(frames);
    const { status, incomplete_details } = statusOf(this.finish);
    frames.push(this.out.frame(status === 'completed' ? 'response.completed' : 'response.incomplete', { response: this.response(status, incomplete_details) }));
    return { frames, done: true };
  }
}
