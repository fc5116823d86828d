/**
 * The one number format of every output the harness writes: report.md, report.html, junit.xml,
 * chart tooltips and axis labels, and the console. A value shown in two places reads the same in
 * both. Missing values are `—`.
 *
 * @module
 */

import type { ComparisonSummary } from "../types/mod.ts";

/** Shown for a missing value. */
const MISSING = "—";

/**
 * The digit-group separator: U+202F NARROW NO-BREAK SPACE, so `18 156` never wraps inside a table
 * cell and is not read as two numbers or as a decimal comma.
 */
const GROUP_SEPARATOR = "\u202f";

/** Binary byte units, smallest first. */
export const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"] as const;

/** Significant digits of a derived statistic or a scaled byte count. */
export const STAT_DIGITS = 4;

type Num = number | null | undefined;

/** A value exactly as measured (shortest round-trip form), e.g. `1.2509139776229858`. */
export function exact(value: Num): string {
  if (value === null || value === undefined) return MISSING;
  return String(value);
}

/**
 * A derived statistic to 4 significant digits: plain between 1e-3 and 1e6, else `1.431e-6`. Zero
 * stays `0`; NaN and infinities are named.
 */
export function stat(value: Num): string {
  if (value === null || value === undefined) return MISSING;
  if (value === 0 || !Number.isFinite(value)) return String(value);
  const a = Math.abs(value);
  if (a >= 1e-3 && a < 1e6) return String(Number(value.toPrecision(STAT_DIGITS)));
  return value.toExponential(STAT_DIGITS - 1).replace(/\.?0+e/, "e");
}

/** A relative error as a percentage to two significant digits (`1e-3` → `0.1 %`). */
export function percent(error: number): string {
  return `${Number((error * 100).toPrecision(2))} %`;
}

/** An integer count with digit groups that do not wrap (`18 156`). */
export function count(value: Num): string {
  if (value === null || value === undefined) return MISSING;
  if (!Number.isFinite(value)) return String(value);
  const digits = Math.round(Math.abs(value)).toString();
  const grouped = digits.replace(/\B(?=(\d{3})+(?!\d))/g, GROUP_SEPARATOR);
  return value < 0 ? `-${grouped}` : grouped;
}

/** Bytes in binary units to 4 significant digits (`14.25 KiB`); exact below 1 KiB (`512 B`). */
export function bytes(value: Num): string {
  if (value === null || value === undefined) return MISSING;
  if (!Number.isFinite(value)) return String(value);
  let v = value;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < BYTE_UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  const shown = u === 0 ? String(v) : String(Number(v.toPrecision(STAT_DIGITS)));
  return `${shown}\u00a0${BYTE_UNITS[u]}`;
}

/**
 * The one duration format of reports and the console: seconds with one decimal below a minute
 * (`9.8 s`), then minutes and seconds (`2 min 05 s`), then hours and minutes (`1 h 02 min`).
 */
export function duration(value: Num): string {
  if (value === null || value === undefined) return MISSING;
  if (value < 59.95) return `${value.toFixed(1)}\u00a0s`;
  const s = Math.round(value);
  const two = (n: number) => String(n).padStart(2, "0");
  if (s < 3600) return `${Math.floor(s / 60)}\u00a0min\u00a0${two(s % 60)}\u00a0s`;
  return `${Math.floor(s / 3600)}\u00a0h\u00a0${two(Math.floor((s % 3600) / 60))}\u00a0min`;
}

/** A ULP distance in a named precision: `18 156 ULP (f32)`. */
export function ulps(value: Num, unit: UlpPrecision): string {
  if (value === null || value === undefined) return MISSING;
  return `${count(value)}\u00a0ULP\u00a0(${unit})`;
}

/** The float precision a ULP count is in. */
export type UlpPrecision = "f32" | "f64";

/**
 * The largest ULP distance of a comparison in its series' own precision: float32 ULPs when both
 * series are float32 values (a float32 loss widened to float64 is 2^29 float64 ULPs per float32
 * ULP, which reads as noise), else float64 ULPs. Null when nothing was compared.
 */
export function comparisonUlp(
  cmp: Pick<ComparisonSummary, "max_ulp" | "max_ulp_f32">,
): { value: number; unit: UlpPrecision } | null {
  if (cmp.max_ulp_f32 !== undefined && cmp.max_ulp_f32 !== null) {
    return { value: cmp.max_ulp_f32, unit: "f32" };
  }
  return cmp.max_ulp === null ? null : { value: cmp.max_ulp, unit: "f64" };
}

/** {@link comparisonUlp} as text (`18 156 ULP (f32)`), `—` when nothing was compared. */
export function comparisonUlpText(
  cmp: Pick<ComparisonSummary, "max_ulp" | "max_ulp_f32">,
): string {
  const u = comparisonUlp(cmp);
  return u === null ? MISSING : ulps(u.value, u.unit);
}
