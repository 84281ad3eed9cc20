/**
 * The usage of a passthrough answer (embeddings; any JSON answer that reports one), read as the
 * answer streams through to the client, so the call is booked with its tokens and its cost like
 * a model call. OpenAI's embeddings answer ends with `"usage": {"prompt_tokens": N,
 * "total_tokens": N}` (API reference, "Create embeddings"), after the vectors: only the last
 * TAIL_BYTES of the body are kept and read once it ends, so a large answer is neither held nor
 * parsed whole (written here: no streaming JSON library reads just a trailing field).
 */
import { Transform, type Readable } from 'node:stream';
import { tokenCount, type Usage } from '../usage/usage.js';

/** How much of the end of an answer is kept to find its `usage` object, bytes. */
const TAIL_BYTES = 4096;

/** The last `"usage": {…}` object (flat, as every OpenAI usage of these endpoints is) in `text`. */
function lastUsage(text: string): Usage | null {
  const found = [...text.matchAll(/"usage"\s*:\s*(\{[^{}]*\})/g)].at(-1)?.[1];
  if (!found) return null;
  try {
    const u = JSON.parse(found) as Record<string, unknown>;
    const input = tokenCount(u['prompt_tokens'] ?? u['input_tokens']);
    const output = tokenCount(u['completion_tokens'] ?? u['output_tokens']);
    return input + output > 0 ? { input, cached: 0, output, reasoning: 0 } : null;
  } catch {
    return null;
  }
}

/**
 * Passes `body` through unchanged and calls `onUsage` once it has ended, with the usage its
 * last bytes report (never called when they report none, or the body is compressed).
 * @returns the stream to send to the client in `body`'s place.
 */
export function tapUsage(body: Readable, onUsage: (u: Usage) => void): Readable {
  let tail: Buffer = Buffer.alloc(0);
  const tap = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
      tail = b.length >= TAIL_BYTES ? b.subarray(b.length - TAIL_BYTES) : Buffer.concat([tail, b]).subarray(-TAIL_BYTES);
      cb(null, chunk);
    },
    flush(cb) {
      const usage = lastUsage(tail.toString('utf8'));
      if (usage) onUsage(usage);
      cb();
    },
  });
  body.on('error', (err) => tap.destroy(err));
  return body.pipe(tap);
}
