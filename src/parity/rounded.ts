/**
 * Detects metrics that were rounded before they were written (printed logs, `:.4f`, Megatron's
 * legacy 5-decimal goldens). On such values an exact lane is meaningless: two runs that differ
 * in the 7th digit compare equal.
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
 * @module
 */

/** Most digits after the decimal point a rounded value shows (covers `:.4f` and `round(x, 5)`). */
export const MAX_DECIMALS = 5;
/** Most significant digits a rounded value shows (covers `%g`, 6 digits). */
export const MAX_SIGNIFICANT = 6;
/** Fewest values needed to call a series rounded. */
export const MIN_VALUES = 2;

/** True when `x`'s shortest decimal form is short (see the module doc). */
export function isShortDecimal(x: number): boolean {
  if (!Number.isFinite(x)) return false;
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
  return decimals <= MAX_DECIMALS || significant <= MAX_SIGNIFICANT;
}

/**
 * Whether every finite value of `values` (where `present` is 1, when given) is short, and
 * there are at least {@link MIN_VALUES} of them.
 */
export function looksRounded(values: ArrayLike<number>, present?: ArrayLike<number>): boolean {
  let seen = 0;
  let fractional = false;
  for (let i = 0; i < values.length; i++) {
    if (present !== undefined && present[i] !== 1) continue;
    const x = values[i];
    if (!Number.isFinite(x)) continue;
    if (!isShortDecimal(x)) return false;
    if (!Number.isInteger(x)) fractional = true;
    seen++;
  }
  return seen >= MIN_VALUES && fractional;
}
