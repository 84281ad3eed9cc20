/**
 * The Responses API stream events of output items (OpenAI API reference, "Streaming
 * events"; the event sequences of the recordings `openai-responses-stream-text.sse` and
 * `openai-responses-stream-function-call.sse`), for the translators that rebuild a Responses
 * stream from another wire API's (responses-chat, responses-messages). The caller decides
 * when an item opens, grows and closes; this writes the events, numbers them
 * (`sequence_number` from 0) and keeps the output items by output index.
 *
 * Per item kind, the events of open / delta / close:
 * - `message`: `output_item.added`, `content_part.added` (an `output_text` part) /
 *   `output_text.delta` / `output_text.done`, `content_part.done`, `output_item.done`;
 * - `reasoning` (raw reasoning text): the same with a `reasoning_text` part and
 *   `reasoning_text.delta|done`;
 * - `summary` (a reasoning summary): `output_item.added`, `reasoning_summary_part.added` /
 *   `reasoning_summary_text.delta` / `reasoning_summary_text.done`,
 *   `reasoning_summary_part.done`, `output_item.done` (with `encrypted_content`);
 * - `opaque` (reasoning with no text, e.g. redacted): `output_item.added` / – /
 *   `output_item.done`;
 * - `call` of a function: `output_item.added` / `function_call_arguments.delta` /
 *   `function_call_arguments.done`, `output_item.done`; of a custom tool the same with
 *   `custom_tool_call_input.delta|done` (a custom input never streamed comes as one delta at
 *   the close). The `openai` SDKs' stream accumulator needs each part added before its deltas.
 */
import type { Obj } from './read.js';
import { callItem, type CallFields, messageItem, newId, reasoningSummaryItem, reasoningTextItem } from './responses-output.js';

export type ItemKind = 'message' | 'reasoning' | 'summary' | 'opaque' | 'call';

/** An output item being streamed. */
export interface OpenItem {
  readonly kind: ItemKind;
  readonly id: string;
  readonly outputIndex: number;
  /** The text, arguments or input so far (what was streamed, or what the caller keeps there). */
  text: string;
  /** Whether a delta event went out. */
  streamed: boolean;
  /** For a call: the call's fields. */
  readonly call?: CallFields;
}

const PREFIX: Readonly<Record<ItemKind, string>> = { message: 'msg', reasoning: 'rs', summary: 'rs', opaque: 'rs', call: 'fc' };

export class ResponsesEmitter {
  private seq = 0;
  /** The output items by output index (an open item's place is held by `{}` until it closes). */
  readonly output: Obj[] = [];

  /** One event frame, `event:` naming its type. */
  frame(type: string, data: Obj): Buffer {
    return Buffer.from(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: this.seq++, ...data })}\n\n`);
  }

  /** Opens an item at the next output index. */
  open(kind: ItemKind, frames: Buffer[], call?: CallFields): OpenItem {
    const item: OpenItem = {
      kind,
      id: newId(call?.custom ? 'ctc' : PREFIX[kind]),
      outputIndex: this.output.length,
      text: '',
      streamed: false,
      ...(call ? { call } : {}),
    };
    this.output.push({});
    const at = { output_index: item.outputIndex };
    frames.push(this.frame('response.output_item.added', { ...at, item: this.item(item, '', undefined, 'in_progress') }));
    const where = { item_id: item.id, ...at };
    if (kind === 'message')
      frames.push(
        this.frame('response.content_part.added', { ...where, content_index: 0, part: { type: 'output_text', annotations: [], logprobs: [], text: '' } }),
      );
    else if (kind === 'reasoning')
      frames.push(this.frame('response.content_part.added', { ...where, content_index: 0, part: { type: 'reasoning_text', text: '' } }));
    else if (kind === 'summary')
      frames.push(this.frame('response.reasoning_summary_part.added', { ...where, summary_index: 0, part: { type: 'summary_text', text: '' } }));
    return item;
  }

  /** A piece of an open item's text, arguments or input. */
  delta(item: OpenItem, piece: string, frames: Buffer[]): void {
    if (piece === '') return;
    item.text += piece;
    item.streamed = true;
    const where = { item_id: item.id, output_index: item.outputIndex };
    switch (item.kind) {
      case 'message':
        frames.push(this.frame('response.output_text.delta', { ...where, content_index: 0, delta: piece, logprobs: [] }));
        return;
      case 'reasoning':
        frames.push(this.frame('response.reasoning_text.delta', { ...where, content_index: 0, delta: piece }));
        return;
      case 'summary':
        frames.push(this.frame('response.reasoning_summary_text.delta', { ...where, summary_index: 0, delta: piece }));
        return;
      case 'call':
        frames.push(
          this.frame(item.call!.custom ? 'response.custom_tool_call_input.delta' : 'response.function_call_arguments.delta', { ...where, delta: piece }),
        );
        return;
      default:
        return;
    }
  }

  /**
   * Closes an item: its done events and `output_item.done`; the done item takes its place in
   * `output`. @param final the complete text (a call's arguments or custom input) when it is
   *   not what was streamed; @param encrypted a reasoning item's `encrypted_content`.
   * @returns the done item.
   */
  close(item: OpenItem, frames: Buffer[], final?: string, encrypted?: string): Obj {
    const text = final ?? item.text;
    const where = { item_id: item.id, output_index: item.outputIndex };
    const done = this.item(item, text, encrypted, 'completed');
    switch (item.kind) {
      case 'message':
      case 'reasoning': {
        const message = item.kind === 'message';
        frames.push(
          this.frame(message ? 'response.output_text.done' : 'response.reasoning_text.done', {
            ...where,
            content_index: 0,
            text,
            ...(message ? { logprobs: [] } : {}),
          }),
        );
        frames.push(this.frame('response.content_part.done', { ...where, content_index: 0, part: (done['content'] as Obj[])[0] }));
        break;
      }
      case 'summary':
        frames.push(this.frame('response.reasoning_summary_text.done', { ...where, summary_index: 0, text }));
        frames.push(this.frame('response.reasoning_summary_part.done', { ...where, summary_index: 0, part: { type: 'summary_text', text } }));
        break;
      case 'call':
        if (item.call!.custom) {
          if (!item.streamed && text !== '') frames.push(this.frame('response.custom_tool_call_input.delta', { ...where, delta: text }));
          frames.push(this.frame('response.custom_tool_call_input.done', { ...where, input: text }));
        } else {
          frames.push(this.frame('response.function_call_arguments.done', { ...where, arguments: text }));
        }
        break;
      default:
        break;
    }
    frames.push(this.frame('response.output_item.done', { output_index: item.outputIndex, item: done }));
    this.output[item.outputIndex] = done;
    return done;
  }

  private item(item: OpenItem, text: string, encrypted: string | undefined, status: 'in_progress' | 'completed'): Obj {
    switch (item.kind) {
      case 'message':
        return messageItem(item.id, text, status);
      case 'reasoning':
        return reasoningTextItem(item.id, text, status);
      case 'summary':
      case 'opaque':
        return reasoningSummaryItem(item.id, item.kind === 'summary' ? text : null, encrypted, status);
      default:
        return callItem(item.id, item.call!, text, status);
    }
  }
}
