/**
 * Anthropic Messages SSE stream -> OpenAI `chat.completion.chunk` SSE stream, translated
 * event by event as the bytes arrive.
 *
 * Anthropic events (API reference, "Streaming Messages"): `message_start` (message with
 * id, model, input usage), per content block `content_block_start` / `content_block_delta`
 * (`text_delta`, `thinking_delta`, `signature_delta`, `input_json_delta`, `citations_delta`)
 * / `content_block_stop`, then `message_delta` (stop_reason, cumulative usage),
 * `message_stop`; `ping` anywhere; `error` (`{"type":"error","error":{type,message}}`)
 * anywhere, after which the stream ends.
 *
 * Output (OpenAI "chat completion chunk" object): `data: {json}\n\n` frames, each with the
 * same `id`, `object`, `created`, `model`; a `choices: []` usage chunk before `data: [DONE]`.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { SseFramer, type SseEvent } from '../../sse/parse.js';
import { mapAnthropicError } from './errors.js';
import { toFinishReason, toOpenAIUsage, type AnthropicUsage } from './response.js';

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Per client-visible tool_use block: its OpenAI `tool_calls[].index`, and whether it got argument bytes. */
interface ToolState {
  readonly index: number;
  sentArgs: boolean;
}

const USAGE_FIELDS = ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens'] as const;

/**
 * Transform: Anthropic SSE bytes in (split anywhere), OpenAI chat SSE bytes out.
 *
 * - `message_start` -> first chunk, delta `{role:'assistant', content:''}`;
 * - `text_delta` -> `delta.content`; `thinking_delta` -> `delta.reasoning_content`;
 * - client `tool_use` block start -> `delta.tool_calls[{index, id, type, function:{name,
 *   arguments:''}}]`, where `index` counts client tool_use blocks from 0; its
 *   `input_json_delta`s -> `function.arguments` pieces; a tool call that got no argument
 *   bytes gets `"{}"` at its block's stop (what OpenAI sends for a no-argument call);
 * - `server_tool_use`, server tool results, `signature_delta`, `citations_delta`, `ping`:
 *   dropped;
 * - `message_delta` -> a chunk with `finish_reason`; `message_stop` -> the usage chunk and
 *   `data: [DONE]`;
 * - `error` -> one `data: {"error":{message,type,param,code}}` frame, then the readable side
 *   ends (later input is ignored).
 *
 * Failures never destroy the stream (what was translated still goes out): an event whose
 * data is not JSON, or an input that ends before any stop reason, ends the output with one
 * OpenAI error frame (`upstream_bad_response`, `upstream_stream_error`). An input that ends
 * after `message_delta` but without `message_stop` is complete: usage and `[DONE]` follow.
 */
export class AnthropicChatStream extends Transform {
  private readonly framer = new SseFramer();
  private id = '';
  private model = '';
  private created = 0;
  private readonly now: () => number;
  private readonly usage: AnthropicUsage = {};
  /** Anthropic content block index -> tool state, for client tool_use blocks only. */
  private readonly tools = new Map<number, ToolState>();
  private toolCount = 0;
  /** Set after `message_stop` or `error`: nothing more is emitted. */
  private done = false;
  /** Set once `message_delta` gave the stop reason. */
  private finished = false;

  /** @param opts.now clock for `created` (Unix seconds); tests pin it. */
  constructor(opts: { now?: () => number } = {}) {
    super();
    this.now = opts.now ?? (() => Math.floor(Date.now() / 1000));
  }

  override _transform(chunk: Buffer | string, _enc: BufferEncoding, cb: TransformCallback): void {
    if (this.done) return cb();
    const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    for (const ev of this.framer.push(buf)) {
      this.handle(ev);
      if (this.done) break;
    }
    cb();
  }

  override _flush(cb: TransformCallback): void {
    if (!this.done) {
      const tail = this.framer.end();
      if (tail) this.handle(tail);
    }
    if (!this.done) {
      // A stop reason already arrived: the answer is complete, only message_stop is missing.
      if (this.finished) this.finish();
      else this.fail('upstream_stream_error', 'The upstream stream ended before the response was complete.');
    }
    cb();
  }

  /** The usage chunk and `[DONE]`. */
  private finish(): void {
    this.pushChunk({ ...this.base(), choices: [], usage: toOpenAIUsage(this.usage) });
    this.push('data: [DONE]\n\n');
    this.done = true;
  }

  /**
   * Ends the output with one OpenAI in-stream error frame, after everything translated so
   * far: the relay sorts it like an upstream's own error event (failover before the first
   * byte reached the client, the final error event after).
   */
  private fail(code: string, message: string): void {
    this.push(`data: ${JSON.stringify({ error: { message, type: 'server_error', param: null, code } })}\n\n`);
    this.done = true;
    this.push(null);
  }

  private handle(ev: SseEvent): void {
    if (ev.data === null || ev.data.trim() === '') return;
    let data: unknown;
    try {
      data = JSON.parse(ev.data);
    } catch {
      this.fail('upstream_bad_response', 'The upstream stream carried an event that is not JSON.');
      return;
    }
    if (!isObj(data)) return;
    const type = typeof data['type'] === 'string' ? data['type'] : ev.event;
    switch (type) {
      case 'message_start':
        this.onMessageStart(data['message']);
        break;
      case 'content_block_start':
        this.onBlockStart(data['index'], data['content_block']);
        break;
      case 'content_block_delta':
        this.onBlockDelta(data['index'], data['delta']);
        break;
      case 'content_block_stop':
        this.onBlockStop(data['index']);
        break;
      case 'message_delta':
        this.finished = true;
        this.takeUsage(data['usage']);
        this.emitDelta({}, toFinishReason(isObj(data['delta']) ? data['delta']['stop_reason'] : undefined));
        break;
      case 'message_stop':
        this.finish();
        break;
      case 'error': {
        const mapped = mapAnthropicError(200, data['error']);
        this.push(`data: ${JSON.stringify({ error: mapped.error })}\n\n`);
        this.done = true;
        this.push(null);
        break;
      }
      default:
        // ping and event types added later
        break;
    }
  }

  private onMessageStart(message: unknown): void {
    if (!isObj(message)) return;
    if (typeof message['id'] === 'string') this.id = message['id'];
    if (typeof message['model'] === 'string') this.model = message['model'];
    this.created = this.now();
    this.takeUsage(message['usage']);
    this.emitDelta({ role: 'assistant', content: '' }, null);
  }

  private onBlockStart(index: unknown, block: unknown): void {
    if (typeof index !== 'number' || !isObj(block) || block['type'] !== 'tool_use') return;
    const state: ToolState = { index: this.toolCount++, sentArgs: false };
    this.tools.set(index, state);
    this.emitDelta(
      { tool_calls: [{ index: state.index, id: String(block['id'] ?? ''), type: 'function', function: { name: String(block['name'] ?? ''), arguments: '' } }] },
      null,
    );
  }

  private onBlockDelta(index: unknown, delta: unknown): void {
    if (!isObj(delta)) return;
    switch (delta['type']) {
      case 'text_delta':
        if (typeof delta['text'] === 'string' && delta['text'] !== '') this.emitDelta({ content: delta['text'] }, null);
        break;
      case 'thinking_delta':
        if (typeof delta['thinking'] === 'string' && delta['thinking'] !== '') this.emitDelta({ reasoning_content: delta['thinking'] }, null);
        break;
      case 'input_json_delta': {
        const tool = typeof index === 'number' ? this.tools.get(index) : undefined;
        const partial = delta['partial_json'];
        if (!tool || typeof partial !== 'string' || partial === '') break;
        tool.sentArgs = true;
        this.emitDelta({ tool_calls: [{ index: tool.index, function: { arguments: partial } }] }, null);
        break;
      }
      default:
        // signature_delta, citations_delta
        break;
    }
  }

  private onBlockStop(index: unknown): void {
    const tool = typeof index === 'number' ? this.tools.get(index) : undefined;
    if (!tool) return;
    if (!tool.sentArgs) {
      tool.sentArgs = true;
      this.emitDelta({ tool_calls: [{ index: tool.index, function: { arguments: '{}' } }] }, null);
    }
    if (typeof index === 'number') this.tools.delete(index);
  }

  /** Counts in `message_start` and `message_delta` are cumulative: the latest value wins. */
  private takeUsage(u: unknown): void {
    if (!isObj(u)) return;
    for (const f of USAGE_FIELDS) {
      const v = u[f];
      if (typeof v === 'number' && Number.isFinite(v)) this.usage[f] = v;
    }
  }

  private base(): Obj {
    return { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model };
  }

  private emitDelta(delta: Obj, finishReason: string | null): void {
    this.pushChunk({ ...this.base(), choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] });
  }

  private pushChunk(chunk: Obj): void {
    this.push(`data: ${JSON.stringify(chunk)}\n\n`);
  }
}
