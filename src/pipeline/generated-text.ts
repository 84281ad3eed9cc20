/**
 * The generated text a stream relay keeps for a usage estimate (an answer that ends without
 * its usage: a client abort, an upstream cut, a provider that never reports it), with its
 * memory bounded whatever the answer's length.
 *
 * A same-API translator does not read a content event's JSON (`StreamStep.deferred`): the
 * event's data waits here, and is read only if the estimate is needed. Kept whole, that is
 * every event's JSON for the life of the stream (about 250 bytes per chat chunk for a few
 * characters of text: a 4,000-token answer would hold ~1 MB per stream, and 1,000 such
 * streams ~1 GB). So once the waiting data passes `budgetBytes`, the translator reads it
 * (`generated()`) and only the text it yields is kept, in stream order. An answer shorter
 * than the budget (and so every stream that completes with its usage within it) is never
 * read; a longer one pays one JSON parse per event past the budget (~0.8 µs per chat chunk,
 * `npm run bench:translate`).
 */
import type { StreamStep, Translator } from '../translate/types.js';

/** Bytes of deferred event data one stream keeps before having the translator read it (~60 chat chunks). */
export const DEFERRED_BUDGET_BYTES = 16 * 1024;
/**
 * What a waiting frame costs beyond its characters (the string's header and its array slot),
 * counted toward the budget so that many tiny frames (`{}`) cannot pile up under it.
 */
const FRAME_OVERHEAD = 32;

export class GeneratedText {
  /** Answer text (content, tool names and arguments), in stream order; for `estimateUsage`. */
  readonly text: string[] = [];
  /** Reasoning text, likewise. */
  readonly reasoning: string[] = [];
  private deferred: string[] = [];
  private deferredChars = 0;

  /**
   * @param translator the attempt's translator: its `generated()` reads deferred events (a
   *   translator without one never defers).
   * @param budgetBytes deferred data kept before it is read: each frame's characters (a
   *   byte each for Latin-1 text, two otherwise) plus FRAME_OVERHEAD; default
   *   {@link DEFERRED_BUDGET_BYTES}.
   */
  constructor(
    private readonly translator: Translator,
    private readonly budgetBytes = DEFERRED_BUDGET_BYTES,
  ) {}

  /** Takes one step's text, reasoning or deferred data. */
  add(step: StreamStep): void {
    if (step.text || step.reasoning) {
      // A frame read at once (one carrying usage, say) comes after the frames still waiting.
      this.readDeferred();
      if (step.text) this.text.push(step.text);
      if (step.reasoning) this.reasoning.push(step.reasoning);
    }
    if (step.deferred) {
      this.deferred.push(step.deferred);
      this.deferredChars += step.deferred.length + FRAME_OVERHEAD;
      if (this.deferredChars > this.budgetBytes) this.readDeferred();
    }
  }

  /**
   * Has the translator read the events still waiting, their text joining the rest. Called
   * past the budget, and at the end when the estimate is needed. Never throws: deferred
   * events were checked to be JSON objects; a batch that still fails to read adds nothing.
   */
  readDeferred(): void {
    if (this.deferred.length === 0) return;
    const events = this.deferred;
    this.deferred = [];
    this.deferredChars = 0;
    if (!this.translator.generated) return;
    try {
      const g = this.translator.generated(events);
      if (g.text) this.text.push(g.text);
      if (g.reasoning) this.reasoning.push(g.reasoning);
    } catch {
      // nothing more to count from this batch
    }
  }
}
