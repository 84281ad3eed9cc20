/**
 * Responses API stream events (OpenAI API reference, "Streaming events"; recordings
 * `openai-responses-stream-*`) -> Anthropic Messages stream events (the sequence
 * `messages-write.ts` keeps), one event at a time.
 *
 * - `response.created` -> `message_start` (a preamble: held until the answer starts, so an
 *   error right after it can still fail over), announcing the gateway's prompt estimate.
 * - A `reasoning` item's `reasoning_summary_text.delta` / `reasoning_text.delta` -> a
 *   `thinking` block (empty `signature`: none is invented) with `thinking_delta`s; a new
 *   summary part of the same item is set apart by a blank line. An encrypted-only item (no
 *   readable text) gives no block.
 * - A `message` item's `output_text.delta` / `refusal.delta` -> a `text` block.
 * - A `function_call` item -> a `tool_use` block (`id` the call id) opened at its
 *   `output_item.added`; its arguments as `input_json_delta`s, from the
 *   `function_call_arguments.delta`s, or whole from whichever event carries them first when
 *   the server sends no pieces (the added item, `function_call_arguments.done`,
 *   `output_item.done`), never twice. Text or reasoning sent whole in `output_item.done`
 *   only is taken from there the same way.
 * - A block closes at its item's `output_item.done`, or when another block opens.
 * - `response.completed` / `response.incomplete` -> `message_delta` (stop reason:
 *   `response.ts`; the whole usage) and `message_stop`. Failures (`error`,
 *   `response.failed`) are the translator's to read.
 */
import { readResponsesUsage } from '../../apis/responses.js';
import { pushAll } from '../../util/push-all.js';
import { reasoningText } from '../chat-responses/response.js';
import { unreadable } from '../failure.js';
import { newMessageId } from '../messages-chat/ids.js';
import { anthropicUsage } from '../messages-chat/response.js';
import { MessagesStreamWriter } from '../messages-write.js';
import { isObj, NOTHING, type Obj } from '../read.js';
import type { StreamStep } from '../types.js';
import { messageText, stopReasonOf } from './response.js';
import { asText } from '../../util/as-text.js';

/** What the stream knows of one output item. */
interface Item {
  readonly kind: 'thinking' | 'text' | 'call';
  /** The writer's key of the item's block. */
  readonly key: string;
  /** Some of its content went out (pieces or whole): whole content is not sent again. */
  sent: boolean;
  /** A reasoning item's last summary part. */
  part?: number;
}

const KIND_OF: Readonly<Record<string, Item['kind']>> = { reasoning: 'thinking', message: 'text', function_call: 'call' };

export class ResponsesToMessagesStream {
  private readonly out: MessagesStreamWriter;
  private model = '';
  /** Output index -> its item. */
  private readonly items = new Map<number, Item>();
  private called = false;
  done = false;

  /** @param promptTokens the prompt's input-token estimate `message_start` announces. */
  constructor(promptTokens = 0) {
    this.out = new MessagesStreamWriter(promptTokens);
  }

  /** One parsed event (`type` read); failures are read by the translator. */
  event(type: string | null, obj: Obj): StreamStep {
    const response = isObj(obj['response']) ? obj['response'] : undefined;
    if (response && typeof response['model'] === 'string' && this.model === '') this.model = response['model'];
    const at = typeof obj['output_index'] === 'number' ? obj['output_index'] : -1;
    const delta = typeof obj['delta'] === 'string' ? obj['delta'] : '';
    switch (type) {
      case 'response.created':
      case 'response.in_progress': {
        const frames = this.out.start(this.model);
        return frames.length > 0 ? { frames, hold: true } : NOTHING;
      }
      case 'response.output_item.added':
        return isObj(obj['item']) ? this.added(at, obj['item']) : NOTHING;
      case 'response.reasoning_summary_text.delta':
      case 'response.reasoning_text.delta': {
        const part = typeof obj['summary_index'] === 'number' ? obj['summary_index'] : 0;
        const item = this.itemAt(at, 'thinking');
        const gap = item.sent && item.part !== undefined && item.part !== part ? '\n\n' : '';
        item.part = part;
        return this.content(item, gap + delta);
      }
      case 'response.output_text.delta':
      case 'response.refusal.delta':
        return this.content(this.itemAt(at, 'text'), delta);
      case 'response.function_call_arguments.delta':
        return this.args(at, delta);
      case 'response.function_call_arguments.done':
        return this.items.get(at)?.sent === false && typeof obj['arguments'] === 'string' ? this.args(at, obj['arguments']) : NOTHING;
      case 'response.output_item.done':
        return isObj(obj['item']) ? this.itemDone(at, obj['item']) : NOTHING;
      case 'response.completed':
      case 'response.incomplete':
        return this.finish(response ?? {});
      default:
        return NOTHING;
    }
  }

  /** The item at an output index, made (of `kind`) when the server sent no `output_item.added`. */
  private itemAt(at: number, kind: Item['kind']): Item {
    let item = this.items.get(at);
    if (!item) {
      item = { kind, key: `${kind}:${at}`, sent: false };
      this.items.set(at, item);
    }
    return item;
  }

  /** `message_start` when it has not gone out yet (a server that sent no `response.created`). */
  private begin(): Buffer[] {
    return this.out.start(this.model);
  }

  /** A new output item: a function call opens its block (with the arguments it already holds). */
  private added(at: number, raw: Obj): StreamStep {
    const kind = KIND_OF[asText(raw['type'])];
    if (kind === undefined || this.items.has(at)) return NOTHING;
    const item = this.itemAt(at, kind);
    if (kind !== 'call') return NOTHING;
    this.called = true;
    const name = asText(raw['name'] ?? '');
    const id = typeof raw['call_id'] === 'string' && raw['call_id'] !== '' ? raw['call_id'] : newMessageId('toolu');
    const frames = [...this.begin(), ...this.out.openBlock(item.key, { type: 'tool_use', id, name, input: {} })];
    const args = typeof raw['arguments'] === 'string' ? raw['arguments'] : '';
    if (args !== '') {
      item.sent = true;
      frames.push(this.out.delta({ type: 'input_json_delta', partial_json: args }));
    }
    return { frames, text: name + args };
  }

  /** A piece of text or reasoning: into the item's block, opened when it is not the open one. */
  private content(item: Item, piece: string): StreamStep {
    if (piece === '' || item.kind === 'call') return NOTHING;
    item.sent = true;
    const frames = this.begin();
    if (this.out.open !== item.key)
      frames.push(...this.out.openBlock(item.key, item.kind === 'thinking' ? { type: 'thinking', thinking: '', signature: '' } : { type: 'text', text: '' }));
    if (item.kind === 'thinking') {
      frames.push(this.out.delta({ type: 'thinking_delta', thinking: piece }));
      return { frames, reasoning: piece };
    }
    frames.push(this.out.delta({ type: 'text_delta', text: piece }));
    return { frames, text: piece };
  }

  /** Arguments of a function call: into its block, which must still be the open one. */
  private args(at: number, piece: string): StreamStep {
    const item = this.items.get(at);
    if (!item || item.kind !== 'call' || piece === '') return NOTHING;
    if (this.out.open !== item.key)
      return {
        error: unreadable('The upstream sent the arguments of a function call after another output item started, which an Anthropic stream cannot carry.'),
      };
    item.sent = true;
    return { frames: [this.out.delta({ type: 'input_json_delta', partial_json: piece })], text: piece };
  }

  /** An item is done: what it holds whole goes out when none of it did; its block closes. */
  private itemDone(at: number, raw: Obj): StreamStep {
    const kind = KIND_OF[asText(raw['type'])];
    if (kind === undefined) return NOTHING;
    const steps: StreamStep[] = [];
    if (!this.items.has(at)) steps.push(this.added(at, raw));
    const item = this.items.get(at)!;
    if (!item.sent) {
      if (kind === 'call') steps.push(this.args(at, typeof raw['arguments'] === 'string' ? raw['arguments'] : ''));
      else steps.push(this.content(item, kind === 'text' ? messageText(raw) : reasoningText(raw)));
    }
    if (this.out.open === item.key) steps.push({ frames: this.out.close() });
    return merge(steps);
  }

  /** The end of the answer: the open block closed, the stop reason and usage, `message_stop`. */
  private finish(response: Obj): StreamStep {
    this.done = true;
    const output = Array.isArray(response['output']) ? (response['output'] as unknown[]) : [];
    const called = this.called || output.some((i) => isObj(i) && i['type'] === 'function_call');
    const frames = [...this.begin(), ...this.out.finish(stopReasonOf(response, called), anthropicUsage(readResponsesUsage(response['usage'])))];
    return { frames, done: true };
  }
}

/** Steps of one event as one step (frames in order; the first error wins and ends it). */
function merge(steps: readonly StreamStep[]): StreamStep {
  const frames: Buffer[] = [];
  let text = '';
  let reasoning = '';
  for (const s of steps) {
    if (s.error) return { ...(frames.length > 0 ? { frames } : {}), error: s.error };
    pushAll(frames, s.frames ?? []);
    text += s.text ?? '';
    reasoning += s.reasoning ?? '';
  }
  return { ...(frames.length > 0 ? { frames } : {}), ...(text ? { text } : {}), ...(reasoning ? { reasoning } : {}) };
}
