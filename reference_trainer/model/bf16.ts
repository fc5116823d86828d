/**
 * bfloat16 rounding: round-to-nearest-even on the float32 bit pattern, as PyTorch's
 * `tensor.to(torch.bfloat16)` does. Values are kept in Float32Array (exactly representable) and
 * converted to raw 16-bit patterns only for files.
 *
 * @module
 */

const scratchF = new Float32Array(1);
const scratchU = new Uint32Array(scratchF.buffer);

function bitsOfWord(u: number): number {
  if ((u & 0x7fffffff) > 0x7f800000) return ((u >>> 16) | 0x40) & 0xffff; // quiet NaN
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

/** The bf16 bit pattern nearest to a float32 value (ties to even). */
export function bf16Bits(x: number): number {
  scratchF[0] = x;
  return bitsOfWord(scratchU[0]);
}

/** Rounds a number to the nearest bf16 value, returned as a float32-exact number. */
export function bf16Round(x: number): number {
  scratchU[0] = bf16Bits(x) << 16;
  return scratchF[0];
}

/** Writes `bf16(src[i])` into `dst` (same length; may be the same array). */
export function roundToBf16Into(src: Float32Array, dst: Float32Array): void {
  const s = new Uint32Array(src.buffer, src.byteOffset, src.length);
  const d = new Uint32Array(dst.buffer, dst.byteOffset, dst.length);
  for (let i = 0; i < s.length; i++) d[i] = bitsOfWord(s[i]) << 16;
}

/** Raw bf16 patterns of float32 values (rounding each). */
export function toBf16Bits(src: Float32Array): Uint16Array {
  const s = new Uint32Array(src.buffer, src.byteOffset, src.length);
  const out = new Uint16Array(src.length);
  for (let i = 0; i < s.length; i++) out[i] = bitsOfWord(s[i]);
  return out;
}

/** Float32 values of raw bf16 patterns (exact widening). */
export function fromBf16Bits(bits: Uint16Array): Float32Array {
  const out = new Float32Array(bits.length);
  const u = new Uint32Array(out.buffer);
  for (let i = 0; i < bits.length; i++) u[i] = bits[i] << 16;
  return out;
}
