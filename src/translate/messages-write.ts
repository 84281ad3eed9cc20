/**
 * Writing an Anthropic Messages stream (Anthropic API reference, "Streaming Messages"; the
 * event sequences of the recordings `anthropic-messages-stream-thinking.sse` and
 * `anthropic-messages-stream-tool-use.sse`) for a bridge from another wire API
 * (`messages-chat`, `messages-responses`): the frames, the one open content block, the
 * message's start and end. Each bridge decides what goes in; this keeps the sequence right.
 *
 * - `message_start` carries the message id (made here, `msg_…`), the model, and the prompt's
 *   input tokens as the gateway estimated them (`TranslatorContext.promptTokens`): the wire
 *   reports usage at its end only, and clients show the prompt size from this event.
 * - One block is open at a time, as on Anthropic's API: opening one closes the open one;
 *   blocks are numbered from 0 in the order they open.
 * - The end: the open block closed, `message_delta` with the stop reason and the whole usage
 *   (the wire's exact counts), `message_stop`.
 */
import type { Obj } from './read.js';
import { newMessageId } from './messages-chat/ids.js';

export class MessagesStreamWriter {
  private index = -1;
  /** The bridge's key of the open block (e.g. `text`, `tool:3`), null when none is open. */
  private openKey: string | null = null;
  private started = false;
  readonly id = newMessageId('msg');

  /** @param promptTokens the input-token estimate `message_start` announces (0 when unknown). */
  constructor(private readonly promptTokens = 0) {}

  /** One SSE frame: `event: <type>` and the data with its `type`. */
  frame(type: string, data: Obj): Buffer {
    return Buffer.from(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  }

  /** Whether `message_start` went out. */
  get hasStarted(): boolean {
    return this.started;
  }

  /** The key of the open block, or null. */
  get open(): string | null {
    return this.openKey;
  }

  /** `message_start` once (an empty list after the first call). */
  start(model: string): Buffer[] {
    if (this.started) return [];
    this.started = true;
    const usage = { input_tokens: Math.max(0, Math.round(this.promptTokens)), output_tokens: 0 };
    return [
      this.frame('message_start', {
        message: { id: this.id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage },
      }),
    ];
  }

  /** Closes the open block, if any. */
  close(): Buffer[] {
    if (this.openKey === null) return [];
    this.openKey = null;
    return [this.frame('content_block_stop', { index: this.index })];
  }

  /** Opens a block under `key` (closing the open one): `content_block_start` with `block`. */
  openBlock(key: string, block: Obj): Buffer[] {
    const frames = this.close();
    this.openKey = key;
    this.index++;
    frames.push(this.frame('content_block_start', { index: this.index, content_block: block }));
    return frames;
  }

  /** A `content_block_delta` for the open block. */
  delta(delta: Obj): Buffer {
    return this.frame('content_block_delta', { index: this.index, delta });
  }

  /** The end of the message: the open block closed, `message_delta` (stop reason, usage), `message_stop`. */
  finish(stopReason: string, usage: Obj): Buffer[] {
    const frames = this.close();
    frames.push(this.frame('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage }));
    frames.push(this.frame('message_stop', {}));
    return frames;
  }
}
