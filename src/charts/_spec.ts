// Shared pieces of every chart spec: JSON type, schema URL, colours, symlog constants, the zoom
// and hover parameters.

/** A vega-lite spec as plain JSON (data inlined). */
export type ChartSpec = { [key: string]: unknown };

/** Vega-lite 6 schema URL (informational; nothing is fetched). */
export const SCHEMA_URL = "https://vega.github.io/schema/vega-lite/v6.json";

/** Fixed verdict colours so PASS is always green and FAIL always red. */
export const VERDICT_DOMAIN = ["PASS", "FAIL", "ERROR", "ABSTAIN"];
/** Colours matching {@link VERDICT_DOMAIN}. */
export const VERDICT_RANGE = ["#2ca02c", "#d62728", "#9467bd", "#ff7f0e"];

/**
 * Series colours for charts that also show verdicts (the history trend): no green, red, purple
 * or orange, so a series is never read as a verdict.
 */
export const SERIES_RANGE = [
  "#1f77b4",
  "#17becf",
  "#8c564b",
  "#7f7f7f",
  "#393b79",
  "#e377c2",
  "#8c6d31",
  "#6baed6",
  "#c49c94",
  "#525252",
];

/** Colour of a failing step, rule or header (the FAIL verdict colour). */
export const FAIL_COLOR = "#d62728";

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

/**
 * What the interactive parts of a chart do, for the spec's `description` (report.html can show
 * it; a static PNG has nothing to zoom, so the picture does not say it).
 */
export const ZOOM_HELP =
  "Drag or wheel to pan and zoom the step axis (the value axis stays fixed); double-click resets.";

/**
 * The `description` of a layer that exists only for interaction (a hover rule): static renders
 * (`staticSpec()`) leave it out.
 */
export const INTERACTIVE_ONLY = "interactive only";

/**
 * An x-only zoom bound to the view's scales: the value axis stays where the data is, so a wheel
 * never lands in an empty range; vega-lite resets it on double-click. Names are unique per spec.
 */
export function xZoom(name: string): ChartSpec {
  return { name, select: { type: "interval", encodings: ["x"] }, bind: "scales" };
}

/**
 * The step axis every chart uses: integer ticks printed like the tables (`1200`, not `1,200`),
 * about one per 60 px of `width` so long runs do not crowd their labels.
 */
export function stepAxis(domain?: [number, number], labels = true, width = WIDTH): ChartSpec {
  const room = Math.max(2, Math.floor(width / 60));
  return {
    field: "step",
    type: "quantitative",
    title: labels ? "optimizer step" : null,
    scale: domain ? { domain, nice: false } : { nice: false },
    axis: {
      tickMinStep: 1,
      tickCount: domain ? Math.max(2, Math.min(room, domain[1] - domain[0])) : room,
      ...(labels ? { format: "d" } : { labels: false }),
    },
  };
}

/**
 * A legend under the plot in as many columns as fit the width with every label whole (the
 * renderer measures DejaVu Sans; about 6.5 px per character at 11 px). Entries fill rows left to
 * right and each column is as wide as its longest entry.
 */
export function bottomLegend(labels: readonly string[], width: number = WIDTH): ChartSpec {
  const entry = (label: string) => label.length * 6.5 + 40;
  let columns = 1;
  for (let c = labels.length; c > 1; c--) {
    let total = 0;
    for (let k = 0; k < c; k++) {
      let widest = 0;
      for (let i = k; i < labels.length; i += c) widest = Math.max(widest, entry(labels[i]));
      total += widest;
    }
    if (total <= width) {
      columns = c;
      break;
    }
  }
  const longest = Math.max(0, ...labels.map(entry));
  return {
    orient: "bottom",
    direction: "horizontal",
    columns,
    labelLimit: Math.max(width, longest),
  };
}

/**
 * Tooltip of one aligned step of a comparison: the preformatted `*_text` fields (the shared
 * number format) under the phase names.
 */
export function differenceTooltip(a: string, b: string): ChartSpec[] {
  return [
    { field: "step", type: "quantitative", title: "step", format: "d" },
    { field: "a_text", type: "nominal", title: a },
    { field: "b_text", type: "nominal", title: b },
    { field: "diff_text", type: "nominal", title: "b − a" },
    { field: "ulp_text", type: "nominal", title: "ULP distance" },
    { field: "allowed_text", type: "nominal", title: "allowed |b − a|" },
  ];
}
