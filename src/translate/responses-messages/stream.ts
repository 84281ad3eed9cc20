/**
 * Anthropic Messages stream events (Anthropic API reference, "Streaming Messages";
 * recordings `anthropic-messages-stream-*`) -> Responses API stream events, one event at a
 * time. Anthropic streams one content block at a time (`content_block_start`, its deltas,
 * `content_block_stop`), so each block is one output item, opened, grown and closed with it
 * (the items as `output.ts` makes them, the events as `../responses-emitter.ts` writes them):
 *
 * - `message_start` -> `response.created`, `response.in_progress` (a preamble: held until
 *   the answer starts, so an error right after it can still fail over);
 * - `text` block -> a `message` item, `text_delta` -> `output_text.delta`;
 * - `thinking` block -> a `reasoning` item with a summary part, `thinking_delta` ->
 *   `reasoning_summary_text.delta`; `signature_delta` is kept, and the closed item carries
 *   the signed block in `encrypted_content`; `redacted_thinking` -> a reasoning item with no
 *   summary, likewise;
 * - client `tool_use` block -> a `function_call` item, `input_json_delta` ->
 *   `function_call_arguments.delta` (a call with no argument bytes gets `{}`); for a custom
 *   tool a `custom_tool_call` item whose `input` (the string inside the streamed JSON) comes
 *   at the block's stop as one `custom_tool_call_input.delta` and `.done`;
 * - server tool blocks, `citations_delta`, `ping`: dropped (a server tool's name and input
 *   count as generated text for estimates);
 * - `message_delta` -> the stop reason and usage; `message_stop` -> `response.completed`, or
 *   `response.incomplete` with its reason, carrying the whole output and the usage (the step
 *   marked `done`). A stream that ends after `message_delta` without `message_stop` is
 *   complete; one that ends before is cut short (the translator's failure).
 */
import { foldAnthropicUsage, readAnthropicUsage } from '../../apis/messages.js';
import type { Usage } from '../../usage/usage.js';
import { isObj, NOTHING, type Obj } from '../read.js';
import { ResponsesEmitter, type OpenItem } from '../responses-emitter.js';
import { responseObject } from '../responses-output.js';
import type { StreamStep } from '../types.js';
import { callArguments, endingOf, type ResponseContext } from './output.js';
import { sealThinking } from './thinking.js';
import { asText } from '../../util/as-text.js';

/** An open content block: its item, and what its close needs (a thinking block's signature, a redacted block's data). */
interface OpenBlock {
  readonly item: OpenItem;
  signature: string;
  readonly data?: string;
}

export class MessagesToResponsesStream {
  private readonly out = new ResponsesEmitter();
  private started = false;
  private model = '';
  /** Anthropic's cumulative counts (`input_tokens`, `cache_read_input_tokens` …). */
  private readonly counts: Record<string, number> = {};
  /** Anthropic content block index -> its open item. */
  private readonly blocks = new Map<number, OpenBlock>();
  /** Content block indexes of server tool calls (not relayed; their text counts in estimates). */
  private readonly serverTools = new Set<number>();
  private stopReason: unknown = null;
  /** Set once `message_delta` gave the stop reason. */
  finished = false;
  /** Set once the final event went out (or the stream failed): nothing more is read. */
  done = false;
  private completed = false;

  constructor(private readonly r: ResponseContext & { readonly createdAt: number }) {}

  /** The usage so far. */
  usage(): Usage | null {
    return readAnthropicUsage(this.counts);
  }

  private withUsage(step: StreamStep): StreamStep {
    const u = this.usage();
    return u ? { ...step, usage: u } : step;
  }

  private response(status: 'in_progress' | 'completed' | 'incomplete', incomplete: Obj | null = null): Obj {
    const done = status !== 'in_progress';
    return responseObject(
      { id: this.r.id, createdAt: this.r.createdAt, model: this.model, echo: this.r.echo },
      { status, incomplete_details: incomplete, output: done ? this.out.output : [], usage: done ? this.usage() : null },
    );
  }

  /** `response.created` and `response.in_progress`, once. */
  private start(frames: Buffer[]): void {
    if (this.started) return;
    this.started = true;
    frames.push(
      this.out.frame('response.created', { response: this.response('in_progress') }),
      this.out.frame('response.in_progress', { response: this.response('in_progress') }),
    );
  }

  /** One parsed Anthropic event (`type` already read; `error` events are the translator's). */
  event(type: string | null, data: Obj): StreamStep {
    switch (type) {
      case 'message_start': {
        const message = isObj(data['message']) ? data['message'] : {};
        if (typeof message['model'] === 'string') this.model = message['model'];
        foldAnthropicUsage(this.counts, message['usage']);
        const frames: Buffer[] = [];
        this.start(frames);
        return this.withUsage(frames.length > 0 ? { frames, hold: true } : NOTHING);
      }
      case 'content_block_start':
        return this.onBlockStart(data['index'], data['content_block']);
      case 'content_block_delta':
        return this.onBlockDelta(data['index'], data['delta']);
      case 'content_block_stop': {
        if (typeof data['index'] !== 'number') return NOTHING;
        this.serverTools.delete(data['index']);
        const frames: Buffer[] = [];
        this.closeBlock(data['index'], frames);
        return frames.length > 0 ? { frames } : NOTHING;
      }
      case 'message_delta': {
        this.finished = true;
        if (isObj(data['delta'])) this.stopReason = data['delta']['stop_reason'];
        foldAnthropicUsage(this.counts, data['usage']);
        return this.withUsage(NOTHING);
      }
      case 'message_stop':
        return this.complete();
      default:
        // ping, and event types added later
        return NOTHING;
    }
  }

  private onBlockStart(index: unknown, block: unknown): StreamStep {
    if (typeof index !== 'number' || !isObj(block)) return NOTHING;
    const name = typeof block['name'] === 'string' ? block['name'] : '';
    if (block['type'] === 'server_tool_use') {
      this.serverTools.add(index);
      return name !== '' ? { text: name } : NOTHING;
    }
    const frames: Buffer[] = [];
    this.start(frames);
    let open: OpenBlock;
    let text = '';
    let reasoning = '';
    switch (block['type']) {
      case 'text':
        open = { item: this.out.open('message', frames), signature: '' };
        text = typeof block['text'] === 'string' ? block['text'] : '';
        this.out.delta(open.item, text, frames);
        break;
      case 'thinking':
        open = { item: this.out.open('summary', frames), signature: typeof block['signature'] === 'string' ? block['signature'] : '' };
        reasoning = typeof block['thinking'] === 'string' ? block['thinking'] : '';
        this.out.delta(open.item, reasoning, frames);
        break;
      case 'redacted_thinking':
        open = { item: this.out.open('opaque', frames), signature: '', ...(typeof block['data'] === 'string' ? { data: block['data'] } : {}) };
        break;
      case 'tool_use': {
        const tool = this.r.tools.back(name);
        const call = { callId: asText(block['id'] ?? ''), name: tool.name, namespace: tool.namespace, custom: tool.kind === 'custom' };
        open = { item: this.out.open('call', frames, call), signature: '' };
        text = name;
        break;
      }
      default:
        // server tool results and block types added later: not the client's
        return frames.length > 0 ? { frames } : NOTHING;
    }
    this.blocks.set(index, open);
    return { frames, ...(text ? { text } : {}), ...(reasoning ? { reasoning } : {}) };
  }

  private onBlockDelta(index: unknown, delta: unknown): StreamStep {
    if (typeof index !== 'number' || !isObj(delta)) return NOTHING;
    const open = this.blocks.get(index);
    const frames: Buffer[] = [];
    switch (delta['type']) {
      case 'text_delta': {
        const text = typeof delta['text'] === 'string' ? delta['text'] : '';
        if (open?.item.kind !== 'message' || text === '') return NOTHING;
        this.out.delta(open.item, text, frames);
        return { frames, text };
      }
      case 'thinking_delta': {
        const reasoning = typeof delta['thinking'] === 'string' ? delta['thinking'] : '';
        if (open?.item.kind !== 'summary' || reasoning === '') return NOTHING;
        this.out.delta(open.item, reasoning, frames);
        return { frames, reasoning };
      }
      case 'signature_delta':
        if (open && typeof delta['signature'] === 'string') open.signature += delta['signature'];
        return NOTHING;
      case 'input_json_delta': {
        const partial = typeof delta['partial_json'] === 'string' ? delta['partial_json'] : '';
        if (partial === '') return NOTHING;
        if (this.serverTools.has(index)) return { text: partial };
        if (open?.item.kind !== 'call') return NOTHING;
        // A custom tool's input is the string inside the JSON: read once the JSON is whole.
        if (open.item.call!.custom) open.item.text += partial;
        else this.out.delta(open.item, partial, frames);
        return { ...(frames.length > 0 ? { frames } : {}), text: partial };
      }
      default:
        // citations_delta, and delta types added later
        return NOTHING;
    }
  }

  /** Closes one open block's item. */
  private closeBlock(index: number, frames: Buffer[]): void {
    const open = this.blocks.get(index);
    if (!open) return;
    this.blocks.delete(index);
    const item = open.item;
    switch (item.kind) {
      case 'summary':
        this.out.close(
          item,
          frames,
          undefined,
          open.signature !== '' ? sealThinking({ type: 'thinking', thinking: item.text, signature: open.signature }, this.r.model) : undefined,
        );
        return;
      case 'opaque':
        this.out.close(
          item,
          frames,
          undefined,
          open.data !== undefined ? sealThinking({ type: 'redacted_thinking', data: open.data }, this.r.model) : undefined,
        );
        return;
      case 'call': {
        let input: unknown = {};
        try {
          input = item.text.trim() === '' ? {} : JSON.parse(item.text);
        } catch {
          input = undefined;
        }
        // Arguments that are not whole JSON go to the client as they came.
        this.out.close(item, frames, item.call!.custom ? callArguments(input ?? { input: item.text }, true) : item.text.trim() === '' ? '{}' : item.text);
        return;
      }
      default:
        this.out.close(item, frames);
    }
  }

  /** The upstream ended: complete if a stop reason came. Null when it was cut short. */
  end(): StreamStep | null {
    if (this.done) return NOTHING;
    return this.finished ? this.complete() : null;
  }

  /** The response's id and output once it completed, else null. */
  answer(): { id: string; output: readonly Obj[] } | null {
    return this.completed ? { id: this.r.id, output: this.out.output } : null;
  }

  /** Every open item closed, then the final event. */
  private complete(): StreamStep {
    this.done = true;
    this.completed = true;
    const frames: Buffer[] = [];
    this.start(frames);
    for (const index of [...this.blocks.keys()]) this.closeBlock(index, frames);
    const { status, incomplete_details } = endingOf(this.stopReason);
    frames.push(this.out.frame(status === 'completed' ? 'response.completed' : 'response.incomplete', { response: this.response(status, incomplete_details) }));
    return this.withUsage({ frames, done: true });
  }
}
