/**
 * Anthropic Messages stream events -> OpenAI `chat.completion.chunk` frames, one event at a
 * time (each event parsed once by the translator; no byte re-framing).
 *
 * Anthropic events (API reference, "Streaming Messages"): `message_start` (message with
 * id, model, input usage), per content block `content_block_start` / `content_block_delta`
 * (`text_delta`, `thinking_delta`, `signature_delta`, `input_json_delta`, `citations_delta`)
 * / `content_block_stop`, then `message_delta` (stop_reason, cumulative usage),
 * `message_stop`; `ping` anywhere; `error` anywhere, after which the stream ends.
 *
 * Output (OpenAI "chat completion chunk" object), each chunk with the same `id`, `object`,
 * `created`, `model`:
 * - `message_start` -> first chunk, delta `{role:'assistant', content:''}`;
 * - `text_delta` -> `delta.content`; `thinking_delta` -> `delta.reasoning_content`;
 * - client `tool_use` block start -> `delta.tool_calls[{index, id, type, function:{name,
 *   arguments:''}}]`, where `index` counts client tool_use blocks from 0; its
 *   `input_json_delta`s -> `function.arguments` pieces; a tool call that got no argument
 *   bytes gets `"{}"` at its block's stop (what OpenAI sends for a no-argument call);
 * - `server_tool_use`, server tool results, `signature_delta`, `citations_delta`, `ping`:
 *   dropped;
 * - `message_delta` -> a chunk with `finish_reason`; `message_stop` -> the usage chunk (only
 *   when the client asked for usage) and `data: [DONE]`.
 * A stream that ends after `message_delta` without `message_stop` is complete (usage chunk
 * and `[DONE]` follow); one that ends before any stop reason is cut short.
 */
import { foldAnthropicUsage, readAnthropicUsage } from '../../apis/messages.js';
import { isObj, NOTHING, type Obj } from '../read.js';
import type { StreamStep } from '../types.js';
import { toFinishReason, toOpenAIUsage } from './response.js';
import { asText } from '../../util/as-text.js';

const DONE = Buffer.from('data: [DONE]\n\n');

/** Per client-visible tool_use block: its OpenAI `tool_calls[].index`, and whether it got argument bytes. */
interface ToolState {
  readonly index: number;
  sentArgs: boolean;
}

export class MessagesToChatStream {
  private id = '';
  private model = '';
  private created = 0;
  /** Anthropic's raw cumulative counts (`input_tokens`, `cache_read_input_tokens` …). */
  private readonly counts: Record<string, number> = {};
  /** Anthropic content block index -> tool state, for client tool_use blocks only. */
  private readonly tools = new Map<number, ToolState>();
  private toolCount = 0;
  /** Content block indexes of server tool calls: not relayed, but their text was generated (it counts in estimates). */
  private readonly serverTools = new Set<number>();
  /** Set after `message_stop`: nothing more is emitted. */
  done = false;
  /** Set once `message_delta` gave the stop reason. */
  finished = false;

  /**
   * @param wantsUsage whether the client asked for the usage chunk (`stream_options.include_usage`).
   * @param now clock for `created` (Unix seconds); tests pin it.
   */
  constructor(
    private readonly wantsUsage: boolean,
    private readonly now: () => number = () => Math.floor(Date.now() / 1000),
  ) {}

  /** One parsed Anthropic event (`type` already read). Errors are the translator's to handle. */
  event(type: string | null, data: Obj): StreamStep {
    switch (type) {
      case 'message_start':
        return this.onMessageStart(data['message']);
      case 'content_block_start':
        return this.onBlockStart(data['index'], data['content_block']);
      case 'content_block_delta':
        return this.onBlockDelta(data['index'], data['delta']);
      case 'content_block_stop':
        return this.onBlockStop(data['index']);
      case 'message_delta': {
        this.finished = true;
        foldAnthropicUsage(this.counts, data['usage']);
        const delta = isObj(data['delta']) ? data['delta'] : {};
        return { frames: [this.chunk({}, toFinishReason(delta['stop_reason']))], ...this.usage() };
      }
      case 'message_stop':
        return this.finish();
      default:
        // ping, and event types added later
        return NOTHING;
    }
  }

  /** The upstream ended: complete if a stop reason came. Null when it was cut short. */
  end(): StreamStep | null {
    if (this.done) return NOTHING;
    return this.finished ? this.finish() : null;
  }

  /** The usage chunk (if the client asked for it) and `[DONE]`. */
  private finish(): StreamStep {
    this.done = true;
    const frames = this.wantsUsage ? [this.frame({ ...this.base(), choices: [], usage: toOpenAIUsage(this.counts) }), DONE] : [DONE];
    return { frames, done: true, ...this.usage() };
  }

  private usage(): { usage?: NonNullable<StreamStep['usage']> } {
    const u = readAnthropicUsage(this.counts);
    return u ? { usage: u } : {};
  }

  private onMessageStart(message: unknown): StreamStep {
    if (!isObj(message)) return NOTHING;
    if (typeof message['id'] === 'string') this.id = message['id'];
    if (typeof message['model'] === 'string') this.model = message['model'];
    this.created = this.now();
    foldAnthropicUsage(this.counts, message['usage']);
    return { frames: [this.chunk({ role: 'assistant', content: '' }, null)], hold: true, ...this.usage() };
  }

  private onBlockStart(index: unknown, block: unknown): StreamStep {
    if (typeof index !== 'number' || !isObj(block)) return NOTHING;
    if (block['type'] === 'server_tool_use') {
      this.serverTools.add(index);
      return typeof block['name'] === 'string' ? { text: block['name'] } : NOTHING;
    }
    if (block['type'] !== 'tool_use') return NOTHING;
    const state: ToolState = { index: this.toolCount++, sentArgs: false };
    this.tools.set(index, state);
    const name = asText(block['name'] ?? '');
    const call = { index: state.index, id: asText(block['id'] ?? ''), type: 'function', function: { name, arguments: '' } };
    return { frames: [this.chunk({ tool_calls: [call] }, null)], text: name };
  }

  private onBlockDelta(index: unknown, delta: unknown): StreamStep {
    if (!isObj(delta)) return NOTHING;
    switch (delta['type']) {
      case 'text_delta': {
        const text = delta['text'];
        return typeof text === 'string' && text !== '' ? { frames: [this.chunk({ content: text }, null)], text } : NOTHING;
      }
      case 'thinking_delta': {
        const reasoning = delta['thinking'];
        return typeof reasoning === 'string' && reasoning !== '' ? { frames: [this.chunk({ reasoning_content: reasoning }, null)], reasoning } : NOTHING;
      }
      case 'input_json_delta': {
        const tool = typeof index === 'number' ? this.tools.get(index) : undefined;
        const partial = delta['partial_json'];
        if (typeof index === 'number' && this.serverTools.has(index)) return typeof partial === 'string' && partial !== '' ? { text: partial } : NOTHING;
        if (!tool || typeof partial !== 'string' || partial === '') return NOTHING;
        tool.sentArgs = true;
        return { frames: [this.chunk({ tool_calls: [{ index: tool.index, function: { arguments: partial } }] }, null)], text: partial };
      }
      default:
        // signature_delta, citations_delta
        return NOTHING;
    }
  }

  private onBlockStop(index: unknown): StreamStep {
    if (typeof index === 'number') this.serverTools.delete(index);
    const tool = typeof index === 'number' ? this.tools.get(index) : undefined;
    if (!tool) return NOTHING;
    this.tools.delete(index as number);
    if (tool.sentArgs) return NOTHING;
    tool.sentArgs = true;
    return { frames: [this.chunk({ tool_calls: [{ index: tool.index, function: { arguments: '{}' } }] }, null)] };
  }

  private base(): Obj {
    return { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model };
  }

  private chunk(delta: Obj, finishReason: string | null): Buffer {
    return this.frame({ ...this.base(), choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] });
  }

  private frame(chunk: Obj): Buffer {
    return Buffer.from(`data: ${JSON.stringify(chunk)}\n\n`);
  }
}
