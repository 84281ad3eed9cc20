/**
 * Chat-completion chunks -> Anthropic Messages stream events, one chunk at a time
 * (Anthropic API reference, "Streaming Messages"; the event sequences of the recordings
 * `anthropic-messages-stream-thinking.sse` and `anthropic-messages-stream-tool-use.sse`).
 *
 * - The first chunk -> `message_start` (a preamble: held until the answer starts, so an
 *   error right after it can still fail over), with the gateway's estimate of the prompt's
 *   input tokens (chat reports usage at the end only; `messages-write.ts`).
 * - Reasoning deltas -> a `thinking` block (`content_block_start` with empty thinking and
 *   signature, `thinking_delta` each, `content_block_stop`); content -> a `text` block
 *   (`text_delta`); each tool call -> a `tool_use` block (`input_json_delta` per argument
 *   piece). One block is open at a time, as on Anthropic's API: a block of another kind, or
 *   the next tool call, closes it. A piece for a tool call already closed (a server that
 *   interleaves parallel calls) cannot be placed and fails the stream loudly.
 * - The end of the answer -> `message_delta` (`stop_reason`, and the usage: every count,
 *   since chat gives them only now) and `message_stop`.
 */
import { chatReasoning } from '../../apis/chat.js';
import type { Usage } from '../../usage/usage.js';
import { unreadable } from '../failure.js';
import { MessagesStreamWriter } from '../messages-write.js';
import { isObj, type Obj } from '../read.js';
import type { StreamStep } from '../types.js';
import { newMessageId } from './ids.js';
import { anthropicUsage, toStopReason } from './response.js';
import { asText } from '../../util/as-text.js';

/** The writer's key of a chat tool call's block. */
const toolKey = (chatIndex: number): string => `tool:${chatIndex}`;

export class ChatToMessagesStream {
  private readonly out: MessagesStreamWriter;
  /** Chat tool-call indexes whose block was opened (and maybe closed). */
  private readonly toolsSeen = new Set<number>();
  private finish: string | null = null;
  done = false;

  /**
   * @param usage the latest usage read from the stream.
   * @param promptTokens the prompt's input-token estimate `message_start` announces.
   */
  constructor(
    private readonly usage: () => Usage | null,
    promptTokens = 0,
  ) {
    this.out = new MessagesStreamWriter(promptTokens);
  }

  get finished(): boolean {
    return this.finish !== null;
  }

  /** One parsed chat chunk (usage and errors are read by the translator). */
  chunk(c: Obj): StreamStep {
    const frames: Buffer[] = this.out.start(asText(c['model'] ?? ''));
    let hold = frames.length > 0;
    let text = '';
    let reasoning = '';
    for (const choice of (Array.isArray(c['choices']) ? c['choices'] : []) as Obj[]) {
      if (!choice || typeof choice !== 'object' || (choice['index'] ?? 0) !== 0) continue;
      const d = (choice['delta'] ?? {}) as Obj;
      const r = chatReasoning(d);
      if (r !== '') {
        reasoning += r;
        if (this.out.open !== 'thinking') frames.push(...this.out.openBlock('thinking', { type: 'thinking', thinking: '', signature: '' }));
        frames.push(this.out.delta({ type: 'thinking_delta', thinking: r }));
      }
      if (typeof d['content'] === 'string' && d['content'] !== '') {
        text += d['content'];
        if (this.out.open !== 'text') frames.push(...this.out.openBlock('text', { type: 'text', text: '' }));
        frames.push(this.out.delta({ type: 'text_delta', text: d['content'] }));
      }
      // An entry that is not an object (`null`) carries nothing: skipped, not read.
      for (const call of (Array.isArray(d['tool_calls']) ? (d['tool_calls'] as unknown[]) : []).filter(isObj)) {
        const step = this.toolDelta(call, frames);
        if (step === null)
          return { error: unreadable('The upstream interleaved the arguments of parallel tool calls, which an Anthropic stream cannot carry.') };
        text += step;
      }
      if (typeof choice['finish_reason'] === 'string') this.finish = choice['finish_reason'];
    }
    if (frames.length > 1) hold = false;
    return { ...(frames.length > 0 ? { frames } : {}), ...(hold ? { hold } : {}), ...(text ? { text } : {}), ...(reasoning ? { reasoning } : {}) };
  }

  /** One entry of a delta's `tool_calls`: its generated text, or null when it belongs to a closed block. */
  private toolDelta(call: Obj, frames: Buffer[]): string | null {
    const chatIndex = typeof call['index'] === 'number' ? call['index'] : 0;
    const fn = (call['function'] ?? {}) as Obj;
    const current = this.out.open === toolKey(chatIndex);
    if (!current) {
      if (this.toolsSeen.has(chatIndex)) return null;
      this.toolsSeen.add(chatIndex);
      const id = typeof call['id'] === 'string' && call['id'] !== '' ? call['id'] : newMessageId('toolu');
      frames.push(...this.out.openBlock(toolKey(chatIndex), { type: 'tool_use', id, name: asText(fn['name'] ?? ''), input: {} }));
    }
    const args = typeof fn['arguments'] === 'string' ? fn['arguments'] : '';
    if (args !== '') frames.push(this.out.delta({ type: 'input_json_delta', partial_json: args }));
    return (current ? '' : asText(fn['name'] ?? '')) + args;
  }

  /** The end of the answer: the open block closed, the stop reason and usage, `message_stop`. */
  complete(): StreamStep {
    this.done = true;
    return { frames: this.out.finish(toStopReason(this.finish), anthropicUsage(this.usage())), done: true };
  }
}
