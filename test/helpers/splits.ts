/** Ways to cut a byte stream into reads, as a socket might deliver it (for framer and translator tests). */
import { seededRandom } from './random.js';

/** Cuts `input` before each position in `cuts` (any order; out-of-range and duplicate cuts ignored). */
export function cutAt(input: Buffer, cuts: Iterable<number>): Buffer[] {
  const at = [...new Set(cuts)].filter((c) => c > 0 && c < input.length).sort((a, b) => a - b);
  const out: Buffer[] = [];
  let from = 0;
  for (const c of at) {
    out.push(input.subarray(from, c));
    from = c;
  }
  out.push(input.subarray(from));
  return out;
}

export function byteByByte(input: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < input.length; i++) out.push(input.subarray(i, i + 1));
  return out;
}

/** Seeded random reads: mostly 1–40 bytes, sometimes up to 2,000. */
export function randomPieces(input: Buffer, seed: number): Buffer[] {
  const r = seededRandom(seed);
  const out: Buffer[] = [];
  for (let i = 0; i < input.length;) {
    const n = r() < 0.1 ? 1 + Math.floor(r() * 2000) : 1 + Math.floor(r() * 40);
    out.push(input.subarray(i, i + n));
    i += n;
  }
  return out;
}

/** The seeds every split test uses (fixed: the tests are deterministic). */
export const SEEDS: readonly number[] = [1, 2, 3, 42, 0xc0ffee, 20_250_101];
