/**
 * The one seeded generator of the tests (mulberry32): uniform numbers in [0, 1) from a 32-bit
 * seed, so a property or fuzz case that fails can be replayed from its seed.
 *
 * @module
 */

/** A mulberry32 stream seeded with `seed`. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
