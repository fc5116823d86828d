// Shared pieces of every chart spec: JSON type, schema URL, colours, symlog constants.

/** A vega-lite spec as plain JSON (data inlined). */
export type ChartSpec = { [key: string]: unknown };

/** Vega-lite 6 schema URL (informational; nothing is fetched). */
export const SCHEMA_URL = "https://vega.github.io/schema/vega-lite/v6.json";

/** Fixed verdict colours so PASS is always green and FAIL always red. */
export const VERDICT_DOMAIN = ["PASS", "FAIL", "ERROR", "ABSTAIN"];
/** Colours matching {@link VERDICT_DOMAIN}. */
export const VERDICT_RANGE = ["#2ca02c", "#d62728", "#9467bd", "#ff7f0e"];

/** Plot width in CSS pixels (PNG is rendered at 2x). */
export const WIDTH = 640;
/** Plot height of a main panel. */
export const HEIGHT = 300;

/** Common top-level config: white background, readable axis titles. */
export const CONFIG = {
  background: "white",
  view: { stroke: "#ddd" },
  axis: { labelFontSize: 11, titleFontSize: 12, gridColor: "#eee" },
  legend: {
    labelFontSize: 11,
    titleFontSize: 12,
    labelLimit: 260,
    symbolOpacity: 1,
    symbolStrokeWidth: 3,
  },
  title: { fontSize: 14, subtitleFontSize: 11, anchor: "start" },
};

/**
 * A symlog constant that makes the smallest positive value stand clear of zero: below the
 * constant the scale is linear, above it logarithmic.
 */
export function symlogConstant(values: Iterable<number>, fallback = 1): number {
  let smallest = Number.POSITIVE_INFINITY;
  for (const v of values) {
    const a = Math.abs(v);
    if (a > 0 && Number.isFinite(a) && a < smallest) smallest = a;
  }
  return Number.isFinite(smallest) ? smallest / 2 : fallback;
}

/** Index of `step` in ascending `steps`, or -1. */
export function indexOfStep(steps: readonly number[], step: number | null | undefined): number {
  if (step === null || step === undefined) return -1;
  let lo = 0;
  let hi = steps.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (steps[mid] === step) return mid;
    if (steps[mid] < step) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/** JSON has no NaN or infinities: vega treats `null` as a gap, which is what a chart needs. */
export function finiteOrNull(v: number): number | null {
  return Number.isFinite(v) ? v : null;
}
