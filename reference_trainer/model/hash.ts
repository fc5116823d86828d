/**
 * A fast synchronous 64-bit hash (two murmur3-style 32-bit lanes) for state digests and file
 * integrity. Not cryptographic: it only has to tell different states apart.
 *
 * @module
 */

const encoder = new TextEncoder();

/** Incremental 64-bit hasher over bytes, words and strings; `digest()` gives 16 hex digits. */
export class Hasher64 {
  #a = 0x9747b28c | 0;
  #b = 0x5bd1e995 | 0;
  #length = 0;

  #word(w: number): void {
    let k = Math.imul(w, 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, 0x1b873593);
    let a = this.#a ^ k;
    a = (a << 13) | (a >>> 19);
    this.#a = (Math.imul(a, 5) + 0xe6546b64) | 0;
    let j = Math.imul(w ^ 0x2545f491, 0x85ebca6b);
    j = (j << 17) | (j >>> 15);
    let b = this.#b ^ Math.imul(j, 0xc2b2ae35);
    b = (b << 11) | (b >>> 21);
    this.#b = (Math.imul(b, 9) + 0x38b34ae5 + this.#a) | 0;
  }

  /** Absorbs raw bytes. */
  update(bytes: Uint8Array): this {
    const n = bytes.length;
    const whole = n & ~3;
    if (bytes.byteOffset % 4 === 0) {
      const words = new Uint32Array(bytes.buffer, bytes.byteOffset, whole >> 2);
      for (let i = 0; i < words.length; i++) this.#word(words[i]);
    } else {
      for (let i = 0; i < whole; i += 4) {
        this.#word(bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24));
      }
    }
    let tail = 0;
    for (let i = whole; i < n; i++) tail |= bytes[i] << ((i - whole) * 8);
    if (n > whole) this.#word(tail);
    this.#length += n;
    return this;
  }

  /** Absorbs a typed array's bytes. */
  updateArray(a: ArrayBufferView): this {
    return this.update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
  }

  /** Absorbs a string (UTF-8) with its length, so concatenations cannot collide. */
  updateString(s: string): this {
    const bytes = encoder.encode(s);
    this.#word(bytes.length);
    return this.update(bytes);
  }

  /** The 64-bit digest as 16 lowercase hex digits. */
  digest(): string {
    let a = this.#a ^ this.#length, b = this.#b ^ Math.floor(this.#length / 4294967296);
    a = fmix32(a + b);
    b = fmix32(b ^ a);
    a = fmix32(a ^ b);
    return hex8(a) + hex8(b);
  }
}

/** A murmur3-style 32-bit finaliser (shared with the counter-based RNG). */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function hex8(x: number): string {
  return (x >>> 0).toString(16).padStart(8, "0");
}

/** Digest of one byte buffer. */
export function hashBytes(bytes: Uint8Array): string {
  return new Hasher64().update(bytes).digest();
}

/** Digest of a JSON-serialisable value, with object keys sorted so key order never matters. */
export function hashJson(value: unknown): string {
  return new Hasher64().updateString(canonicalJson(value)).digest();
}

/**
 * JSON with object keys sorted recursively (a stable text form for hashing). The harness has its
 * own (`experiment/canonical_json.ts`); this one stays apart because the trainer sits across the
 * process contract and may import only `affine`, and because its text feeds the digests stored
 * in checkpoints, which must not move when the harness changes its cache keys.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v) => {
    if (v && typeof v === "object" && !Array.isArray(v)) {
      return Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]]));
    }
    return v;
  });
}
