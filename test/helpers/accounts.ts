/**
 * Fake upstream accounts for the multi-replica and Redis-outage tests: a FakeUpstream that
 * answers any chat call naming itself (`from <id>`), in the shape asked for (SSE when
 * `stream`), and tracks how many requests it had open at once. The prompt steers it:
 * `hold` waits for the account's gate, `wait:<ms>` answers after about that long, anything
 * else after `ms` (0 unless set by `reset`).
 */
import { FakeUpstream, type ReceivedRequest, type ScriptedReply } from './fake-upstream.js';

/** A promise with its resolver. */
export interface Deferred {
  promise: Promise<void>;
  resolve(): void;
}

/** A fresh, unresolved Deferred. */
export function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

function sseChunk(content: string, finish: string | null = null): string {
  return `data: ${JSON.stringify({
    id: 'chatcmpl-account',
    object: 'chat.completion.chunk',
    created: 1700000000,
    model: 'upstream-model',
    choices: [{ index: 0, delta: content ? { content } : {}, finish_reason: finish }],
  })}\n\n`;
}

/** A chat reply of `text` in the shape the request asked for (SSE when `stream`), taking about `ms`. */
export function answer(req: ReceivedRequest, text: string, ms = 0): ScriptedReply {
  if (req.json?.['stream'] === true) {
    return {
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      steps: [sseChunk(text), { delayMs: ms }, sseChunk('', 'stop'), 'data: [DONE]\n\n'],
    };
  }
  return {
    status: 200,
    delayMs: ms,
    body: {
      id: 'chatcmpl-account',
      object: 'chat.completion',
      created: 1700000000,
      model: 'upstream-model',
      choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
    },
  };
}

/** The first message's content of a received chat request. */
export const promptOf = (req: ReceivedRequest) => (req.json?.['messages'] as { content: string }[] | undefined)?.[0]?.content;

/**
 * A fake upstream account that tracks its own concurrency: the highest number of requests
 * it had open at once (counted when each arrives; a request stops counting once its
 * response is written to the end, or its connection closes).
 */
export class Account {
  readonly fake = new FakeUpstream();
  /** Highest number of requests open at once (counted as each arrives). */
  max = 0;
  /** Answer time, ms, of prompts other than `hold` and `wait:<ms>`. */
  ms = 0;
  /** Requests whose prompt is `hold` wait for this before answering. */
  gate: Deferred = deferred();

  constructor(readonly id: string) {
    this.fake.on(async (req) => {
      this.max = Math.max(this.max, this.open());
      const prompt = promptOf(req) ?? '';
      if (prompt === 'hold') await this.gate.promise;
      const wait = /^wait:(\d+)$/.exec(prompt);
      return answer(req, `from ${this.id}`, wait ? Number(wait[1]) : this.ms);
    });
  }

  async start(): Promise<this> {
    await this.fake.start();
    return this;
  }

  get url(): string {
    return this.fake.url;
  }

  /** Requests received so far. */
  get count(): number {
    return this.fake.requests.length;
  }

  /** Requests open now. */
  open(): number {
    return this.fake.requests.filter((r) => !r.finished && r.abortedAt === null).length;
  }

  /** Opens the gate (held requests answer) and arms a new one; clears `max`; answers take `ms` from now on. */
  reset(ms = 0): void {
    this.max = 0;
    this.ms = ms;
    this.gate.resolve();
    this.gate = deferred();
  }
}
