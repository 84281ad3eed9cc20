/**
 * Ids in Anthropic's style for answers made from chat completions: `msg_` / `toolu_` and
 * 24 base-62 characters (the recordings' ids have that length).
 */
import { randomBytes } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export function newMessageId(prefix: 'msg' | 'toolu'): string {
  const bytes = randomBytes(24);
  let out = `${prefix}_01`;
  for (let i = 0; i < 22; i++) out += ALPHABET[bytes[i]! % ALPHABET.length];
  return out;
}
