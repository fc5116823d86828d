/**
 * Integer ULP distances: how many representable floats lie between two values. Sign-magnitude
 * bit patterns are mapped to a monotonic integer line, so the distance across zero and across a
 * power of two is exact (Reynolds, "Measuring ULP distance").
 *
 * @module
 */

const f64 = new Float64Array(1);
const u64 = new BigInt64Array(f64.buffer);
const words = new Uint32Array(f64.buffer);
// Word order of a float64 in memory (little-endian on every platform Deno runs on, but check).
const HI = (() => {
  f64[0] = 1;
  return words[1] === 0x3ff00000 ? 1 : 0;
})();
const LO = 1 - HI;
const TWO_32 = 4294967296;
const f32 = new Float32Array(1);
const i32 = new Int32Array(f32.buffer);

function orderedBits64(x: number): bigint {
  f64[0] = x;
  const bits = u64[0];
  // Negative floats count down from zero: map them below the positive range.
  return bits < 0n ? -(bits & 0x7fffffffffffffffn) : bits;
}

function orderedBits32(x: number): number {
  f32[0] = x;
  const bits = i32[0];
  return bits < 0 ? -(bits & 0x7fffffff) : bits;
}

/**
 * Float64 ULP distance between two finite numbers (`Infinity` when either is NaN or infinite
 * and they differ; 0 for identical values, including +0 and -0).
 *
 * @example
 * ```ts
 * import { ulpDistance64 } from "./ulp.ts";
 * ulpDistance64(1, 1 + Number.EPSILON); // 1
 * ```
 */
export function ulpDistance64(a: number, b: number): number {
  if (a === b) return 0;
  if (!Number.isFinite(a) || !Number.isFinite(b)) return Number.POSITIVE_INFINITY;
  // Fast path on the two 32-bit words: exact whenever the distance is below 2^53.
  f64[0] = a;
  const hiA = words[HI];
  const loA = words[LO];
  f64[0] = b;
  const hiB = words[HI];
  const loB = words[LO];
  const negA = hiA >= 0x80000000;
  const negB = hiB >= 0x80000000;
  const magHiA = negA ? hiA - 0x80000000 : hiA;
  const magHiB = negB ? hiB - 0x80000000 : hiB;
  const d = negA === negB
    ? Math.abs((magHiA - magHiB) * TWO_32 + (loA - loB))
    : (magHiA + magHiB) * TWO_32 + (loA + loB);
  if (d < Number.MAX_SAFE_INTEGER) return d;
  const exact = orderedBits64(a) - orderedBits64(b);
  return Number(exact < 0n ? -exact : exact);
}

/** True when `x` survives a round trip through float32 unchanged. */
export function isFloat32(x: number): boolean {
  return Math.fround(x) === x || Number.isNaN(x);
}

/**
 * Float32 ULP distance, defined only when both values are float32-representable (null
 * otherwise).
 */
export function ulpDistance32(a: number, b: number): number | null {
  if (!isFloat32(a) || !isFloat32(b)) return null;
  if (a === b) return 0;
  if (!Number.isFinite(a) || !Number.isFinite(b)) return Number.POSITIVE_INFINITY;
  return Math.abs(orderedBits32(a) - orderedBits32(b));
}

/** Float width a ULP distance is counted in. */
export type UlpUnit = "f32" | "f64";

/**
 * The unit to count ULPs in for a series: float32 when every value is float32-representable (a
 * trainer's fp32 loss widened to float64 would otherwise show 2^29 float64 ULPs per float32 ULP),
 * else float64.
 */
export function ulpUnitOf(values: Iterable<number>): UlpUnit {
  for (const v of values) if (!isFloat32(v)) return "f64";
  return "f32";
}

/** ULP distance counted in `unit` (float64 when the values do not fit float32). */
export function ulpDistanceIn(unit: UlpUnit, a: number, b: number): number {
  return unit === "f32" ? ulpDistance32(a, b) ?? ulpDistance64(a, b) : ulpDistance64(a, b);
}
