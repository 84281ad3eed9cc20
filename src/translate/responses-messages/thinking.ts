/**
 * Anthropic thinking blocks carried through a Responses client, in the `encrypted_content`
 * of the reasoning item the block became.
 *
 * Why (Anthropic docs, "Extended thinking", "Preserving thinking blocks"): with thinking on,
 * a turn that continues a tool call must send the assistant turn's thinking block back as it
 * came, `signature` included, or Anthropic refuses the request. A Responses client keeps and
 * returns reasoning items, and their `encrypted_content` is opaque to it (Codex CLI asks for
 * it with `include: ["reasoning.encrypted_content"]` and sends the items back as they came),
 * so the block travels there: the text, the signature (a `redacted_thinking` block's `data`)
 * and the model it was made by, base64url JSON behind a tag that tells it apart from an
 * OpenAI account's encrypted reasoning (which means nothing to Anthropic and is left out).
 * Nothing secret is in it: the client already has the thinking text as the item's summary;
 * the signature only lets Anthropic check that the text is the model's own.
 */
import { isObj, type Obj } from '../read.js';

/** The tag our encrypted content starts with. */
const TAG = 'switchyard.anthropic-thinking.v1.';

/** A `thinking` or `redacted_thinking` block, as Anthropic takes it back. */
export type ThinkingBlock = { type: 'thinking'; thinking: string; signature: string } | { type: 'redacted_thinking'; data: string };

/** The `encrypted_content` carrying `block`, made by `model` (the upstream model id the request named). */
export function sealThinking(block: ThinkingBlock, model: string): string {
  return TAG + Buffer.from(JSON.stringify({ model, block }), 'utf8').toString('base64url');
}

/**
 * The block an `encrypted_content` carries, when it is ours, well formed, signed, and made
 * by `model` (a block of another model is not sent back to this one); else null.
 */
export function openThinking(encrypted: unknown, model: string): ThinkingBlock | null {
  if (typeof encrypted !== 'string' || !encrypted.startsWith(TAG)) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(encrypted.slice(TAG.length), 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (!isObj(parsed) || parsed['model'] !== model || !isObj(parsed['block'])) return null;
  const b: Obj = parsed['block'];
  if (b['type'] === 'thinking' && typeof b['thinking'] === 'string' && typeof b['signature'] === 'string' && b['signature'] !== '') {
    return { type: 'thinking', thinking: b['thinking'], signature: b['signature'] };
  }
  if (b['type'] === 'redacted_thinking' && typeof b['data'] === 'string' && b['data'] !== '') return { type: 'redacted_thinking', data: b['data'] };
  return null;
}
