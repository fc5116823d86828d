/**
 * Counter-based random numbers: every draw is a pure hash of (seed, purpose, counters...), so
 * a value depends on what it is for (a dropout unit of a token of a global sample) and never on
 * how many ranks drew before it. That keeps dropout masks and shuffles identical on every
 * topology, and the only RNG state worth saving is a counter.
 *
 * @module
 */

import { fmix32 } from "./hash.ts";

/** Purpose codes keep streams for different uses apart. */
export const Purpose = {
  /** Dropout keep/drop decisions. */
  dropout: 1,
  /** Per-epoch sampler shuffles. */
  shuffle: 2,
  /** Parameter initialisation. */
  init: 3,
  /** Synthetic data generation. */
  data: 4,
  /** Draws made by a faulty save (`save-perturbs-rng`). */
  save: 5,
} as const;

function absorb(h: number, word: number): number {
  let k = Math.imul(word | 0, 0xcc9e2d51);
  k = (k << 15) | (k >>> 17);
  k = Math.imul(k, 0x1b873593);
  h ^= k;
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

/** Hash of up to five 32-bit words into a uniform 32-bit unsigned integer. */
export function hash5(a: number, b: number, c = 0, d = 0, e = 0): number {
  let h = 0x3c6ef372;
  h = absorb(h, a);
  h = absorb(h, b);
  h = absorb(h, c);
  h = absorb(h, d);
  h = absorb(h, e);
  return fmix32(h ^ 20);
}

/** A uniform draw in [0, 1) from five key words. */
export function uniform5(a: number, b: number, c = 0, d = 0, e = 0): number {
  return hash5(a, b, c, d, e) / 4294967296;
}

/** A standard normal draw (Box-Muller over two keyed uniforms). */
export function normal4(a: number, b: number, c: number, d: number): number {
  const u1 = (hash5(a, b, c, d, 0) + 1) / 4294967297;
  const u2 = hash5(a, b, c, d, 1) / 4294967296;
  return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
}

/** The Fisher-Yates permutation of `0..n-1` for one epoch of one seed. */
export function epochPermutation(seed: number, epoch: number, n: number): Int32Array {
  const perm = new Int32Array(n);
  for (let i = 0; i < n; i++) perm[i] = i;
  for (let i = n - 1; i > 0; i--) {
    const j = hash5(seed, Purpose.shuffle, epoch, i) % (i + 1);
    const t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  return perm;
}
