/**
 * Detects metrics that were rounded before they were written (printed logs, `:.4f`, Megatron's
 * legacy 5-decimal goldens). On such values an exact lane is meaningless: two runs that differ
 * in the 7th digit compare equal, and a full-precision value never equals its rounded copy.
 *
 * Rule: a value is *short* when its shortest round-trip decimal form (`String(x)`) has at most
 * {@link MAX_DECIMALS} digits after the point or at most {@link MAX_SIGNIFICANT} significant
 * digits. A series is rounded when it has at least {@link MIN_VALUES} finite values and every
 * one is short. A float64 a trainer computed has 15–17 significant digits (a float32 widened to
 * float64 has ~8–9 as float32 but 16–17 as its exact float64 value), so the chance that 2 honest
 * losses are all short is negligible. Values that are genuinely short (a constant learning rate
 * of 0.0003) do trigger it: compare such metrics in the tolerance lane, where rounding is only
 * a warning. A series of whole numbers (token or zero counts) is exact, never rounded.
 *
 * One side against the other ({@link roundedSides}): a side is also rounded when every value has
 * at most {@link ONE_SIDED_DECIMALS} decimals or {@link ONE_SIDED_SIGNIFICANT} significant
 * digits while the other side's values do not (`round(loss, 8)` against a full-precision
 * baseline): the two sides were written at different precisions.
 *
 * @module
 */

/** Most digits after the decimal point a rounded value shows (covers `:.4f` and `round(x, 5)`). */
export const MAX_DECIMALS = 5;
/** Most significant digits a rounded value shows (covers `%g`, 6 digits). */
export const MAX_SIGNIFICANT = 6;
/** Fewest values needed to call a series rounded. */
export const MIN_VALUES = 2;
/** Most decimals of a side written coarser than the other (`round(x, 8)`, `:.9f`). */
const ONE_SIDED_DECIMALS = 9;
/** Most significant digits of a side written coarser than the other (float32 printed short). */
const ONE_SIDED_SIGNIFICANT = 10;

/** The precision a rounded series shows: the most decimals and significant digits of a value. */
export interface Rounding {
  /** Most digits after the point of any value. */
  decimals: number;
  /** Most significant digits of any value. */
  significant: number;
}

/** The window values of one side: values and, optionally, which were logged. */
export interface SideValues {
  /** Values of the metric. */
  values: ArrayLike<number>;
  /** 1 where the metric was logged (all when absent). */
  present?: ArrayLike<number>;
}

/** True when `x`'s shortest decimal form is short (see the module doc). */
export function isShortDecimal(x: number): boolean {
  if (!Number.isFinite(x)) return false;
  const { decimals, significant } = digitsOf(x);
  return decimals <= MAX_DECIMALS || significant <= MAX_SIGNIFICANT;
}

/**
 * Whether every finite value of `values` (where `present` is 1, when given) is short, and
 * there are at least {@link MIN_VALUES} of them.
 */
export function looksRounded(values: ArrayLike<number>, present?: ArrayLike<number>): boolean {
  return roundingWithin({ values, present }, MAX_DECIMALS, MAX_SIGNIFICANT) !== null;
}

/**
 * The rounding of each side, null for a side at full precision: short on its own
 * ({@link looksRounded}), or written coarser than the other side (see the module doc).
 */
export function roundedSides(a: SideValues, b: SideValues): [Rounding | null, Rounding | null] {
  const coarse = [a, b].map((s) => roundingWithin(s, ONE_SIDED_DECIMALS, ONE_SIDED_SIGNIFICANT));
  return [a, b].map((side, i) =>
    roundingWithin(side, MAX_DECIMALS, MAX_SIGNIFICANT) ??
      (coarse[1 - i] === null ? coarse[i] : null)
  ) as [Rounding | null, Rounding | null];
}

/**
 * How far a rounded value may lie from the value computed: `atol + rtol·|x|`. Either rounding
 * (to decimals or to significant digits) could have written the series, so both half-units
 * count, with a few float64 ULPs for the decimal's own binary form.
 */
export function roundingBound(r: Rounding | null): { atol: number; rtol: number } {
  if (r === null) return { atol: 0, rtol: 0 };
  return {
    atol: 0.5 * 10 ** -r.decimals * (1 + 1e-9),
    rtol: 0.5 * 10 ** (1 - r.significant) * 1.01 + 8 * Number.EPSILON,
  };
}

/** The rounding of one side when every value is within the limits, else null. */
function roundingWithin(
  side: SideValues,
  maxDecimals: number,
  maxSignificant: number,
): Rounding | null {
  const { values, present } = side;
  let seen = 0;
  let fractional = false;
  let decimals = 0;
  let significant = 0;
  for (let i = 0; i < values.length; i++) {
    if (present !== undefined && present[i] !== 1) continue;
    const x = values[i];
    if (!Number.isFinite(x)) continue;
    const d = digitsOf(x);
    if (d.decimals > maxDecimals && d.significant > maxSignificant) return null;
    if (!Number.isInteger(x)) fractional = true;
    decimals = Math.max(decimals, d.decimals);
    significant = Math.max(significant, d.significant);
    seen++;
  }
  return seen >= MIN_VALUES && fractional ? { decimals, significant } : null;
}

/** Decimals and significant digits of `x`'s shortest round-trip form. */
function digitsOf(x: number): Rounding {
  const text = String(Math.abs(x));
  const e = text.indexOf("e");
  const mantissa = e < 0 ? text : text.slice(0, e);
  const exponent = e < 0 ? 0 : Number(text.slice(e + 1));
  const dot = mantissa.indexOf(".");
  const intPart = dot < 0 ? mantissa : mantissa.slice(0, dot);
  const fracPart = dot < 0 ? "" : mantissa.slice(dot + 1);
  const digits = (intPart + fracPart).replace(/^0+/, "");
  const significant = digits.replace(/0+$/, "").length;
  const decimals = Math.max(0, fracPart.length - exponent);
  return { decimals, significant };
}
