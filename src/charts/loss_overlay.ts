/**
 * The loss overlay: the baseline and every other phase on one step axis, a rule at the save
 * step, one red rule per distinct first divergent step labelled with the phases that broke there,
 * and, when repeated baselines were run, the noise-floor band (min/max across them).
 *
 * Two panels: the steps from just before the save to the end, with the value axis fitted to
 * them (warm-up losses would otherwise set the range and hide a resume's gap), above the whole
 * run for context. Each panel switches to a log axis when its values span more than three
 * decades (a phase that blows up to 1e7 would flatten every other line). Phases whose series are
 * bit-identical are drawn once, as one legend entry (`resume-plan-first_holder (= 2 more)`), so
 * no line hides behind another. Hovering shows every series' value at that step.
 *
 * @module
 */

import { DEFAULT_METRIC } from "../types/mod.ts";
import { exact } from "../format/mod.ts";
import { decadeDomain, logAxis, STAT_LABEL_EXPR } from "./_axis_labels.ts";
import {
  type BandPoint,
  DEFAULT_MAX_POINTS,
  downsampleBand,
  downsampleIndices,
} from "./downsample.ts";
import {
  bottomLegend,
  type ChartSpec,
  CONFIG,
  HEIGHT,
  indexOfStep,
  SCHEMA_URL,
  stepAxis,
  WIDTH,
  ZOOM_HELP,
} from "./_spec.ts";
import {
  baselineLayer,
  divergenceMarkers,
  envelopeLayer,
  hoverLayer,
  type LineStyle,
  saveRule,
  seriesLayer,
} from "./_overlay_layers.ts";

/** One line of the overlay. */
export interface OverlaySeries {
  /** Phase name (legend entry). */
  phase: string;
  /** Steps, ascending. */
  steps: number[];
  /** Values, one per step. */
  values: number[];
}

/** A first divergent step and the phases that broke there (from `culprits()`). */
export interface OverlayDivergence {
  /** First divergent step. */
  step: number;
  /** Culprit phases diverging first at this step. */
  phases: string[];
}

/** Inputs of {@link lossOverlaySpec}. */
export interface LossOverlayInput {
  /** Chart title. */
  title: string;
  /** Metric name for the y axis (default `loss`). */
  metric?: string;
  /** Lines, the baseline first (drawn wider, underneath). */
  series: OverlaySeries[];
  /** Step after which the split phase saved; drawn as a rule. */
  saveAt?: number | null;
  /** Noise-floor band, per step min/max across the baseline and its repeats. */
  band?: BandPoint[] | null;
  /** Force a logarithmic y axis (experiment `charts.log_scale`); otherwise chosen by range. */
  logScale?: boolean;
  /** Display budget per series. */
  maxPoints?: number;
  /** Steps that must survive downsampling (first divergent steps). */
  keepSteps?: number[];
  /** First divergences: one red rule per distinct step, one label naming its culprits. */
  divergences?: OverlayDivergence[];
}

/** One drawn line: a phase, or several phases whose series are bit-identical. */
export interface OverlayGroup {
  /** Legend entry: the first phase, with `(= n more)` when others are identical to it. */
  label: string;
  /** Every phase drawn by this line, the first one first. */
  phases: string[];
  /** The series (of the first phase). */
  series: OverlaySeries;
}

/** Points per line in a panel above which lines are drawn solid (dashes would blur them). */
const DASH_LIMIT = 150;

/** Series spanning more than this ratio (max/min) get a log axis. */
const LOG_RANGE_RATIO = 1e3;

/**
 * Groups series that are bit-identical (same steps, same values; NaN equals NaN) so each group
 * is drawn as one line. Order follows the first member of each group.
 */
export function collapseIdentical(series: readonly OverlaySeries[]): OverlayGroup[] {
  const groups: OverlayGroup[] = [];
  for (const s of series) {
    const same = groups.find((g) => sameSeries(g.series, s));
    if (same) same.phases.push(s.phase);
    else groups.push({ label: s.phase, phases: [s.phase], series: s });
  }
  for (const g of groups) {
    if (g.phases.length > 1) g.label = `${g.phases[0]} (= ${g.phases.length - 1} more)`;
  }
  return groups;
}

/** The y scale of a panel: log, symlog (values ≤ 0 over many decades) or linear. */
export type ValueScale = "log" | "symlog" | "linear";

/**
 * The y scale for `values`: log when forced or when the positive values span more than
 * {@link LOG_RANGE_RATIO}; symlog instead of log when some value is ≤ 0 (a log axis cannot hold
 * it); linear otherwise.
 */
export function chooseValueScale(values: Iterable<number>, forceLog = false): ValueScale {
  let minAbs = Number.POSITIVE_INFINITY;
  let maxAbs = 0;
  let nonPositive = false;
  for (const v of values) {
    if (!Number.isFinite(v)) continue;
    if (v <= 0) nonPositive = true;
    const a = Math.abs(v);
    if (a > 0 && a < minAbs) minAbs = a;
    if (a > maxAbs) maxAbs = a;
  }
  const wide = maxAbs > 0 && maxAbs / minAbs > LOG_RANGE_RATIO;
  if (!forceLog && !wide) return "linear";
  return nonPositive ? "symlog" : "log";
}

/**
 * Builds the loss-overlay vega-lite spec (pure: data inlined, nothing read).
 *
 * @example
 * ```ts
 * import { lossOverlaySpec } from "./loss_overlay.ts";
 * const spec = lossOverlaySpec({
 *   title: "quickstart: loss",
 *   series: [{ phase: "baseline", steps: [1, 2], values: [2.5, 2.4] }],
 *   saveAt: 1,
 * });
 * Array.isArray(spec.vconcat); // true: after the save, then the whole run
 * ```
 */
export function lossOverlaySpec(input: LossOverlayInput): ChartSpec {
  const maxPoints = input.maxPoints ?? DEFAULT_MAX_POINTS;
  const marks = [...(input.divergences ?? [])].sort((x, y) => x.step - y.step);
  const saveAt = input.saveAt ?? null;
  const keep = [
    ...(input.keepSteps ?? []),
    ...marks.map((m) => m.step),
    ...(saveAt ? [saveAt, saveAt + 1] : []),
  ];
  const groups = collapseIdentical(input.series);
  const labels = groups.map((g) => g.label);
  const culprits = new Set(marks.flatMap((m) => m.phases));
  const emphasised = groups.filter((g) => g.phases.some((p) => culprits.has(p))).map((g) =>
    g.label
  );
  const data = _overlayData(groups, keep, maxPoints);
  const band = input.band && input.band.length > 0 ? downsampleBand(input.band, maxPoints) : [];
  const datasets = {
    points: data.points,
    hover: data.hover,
    band: band.map((p) => ({ step: p.step, lo: p.lo, hi: p.hi })),
  };
  const overlay: _Overlay = {
    metric: input.metric ?? DEFAULT_METRIC,
    logScale: input.logScale ?? false,
    groups,
    labels,
    emphasised,
    points: data.points,
    band,
    marks,
    saveAt,
    last: data.last,
    color: {
      field: "phase",
      type: "nominal",
      title: null,
      scale: { domain: labels, scheme: "tableau10" },
      legend: { ...bottomLegend(labels), symbolType: "stroke" },
    },
  };
  const subtitle = _subtitle(band.length > 0, groups, data.downsampled ? maxPoints : null);
  return {
    $schema: SCHEMA_URL,
    description: `${ZOOM_HELP} Hover for every phase's value at a step.`,
    title: subtitle.length > 0 ? { text: input.title, subtitle } : input.title,
    config: { ...CONFIG, title: { ...CONFIG.title, subtitleFontSize: 11 } },
    datasets,
    vconcat: _views(overlay, data.first),
    resolve: { scale: { color: "shared" } },
  };
}

/** A drawn point of the overlay (`value` null where the loss is not finite). */
interface _Point {
  step: number;
  phase: string;
  value: number | null;
}

/** What every panel of one overlay shares. */
interface _Overlay extends LineStyle {
  metric: string;
  logScale: boolean;
  groups: OverlayGroup[];
  points: _Point[];
  band: BandPoint[];
  /** First divergences, by step. */
  marks: OverlayDivergence[];
  saveAt: number | null;
  /** Last step drawn. */
  last: number;
}

/** The downsampled points of every group, the hover rows by step, and the steps drawn. */
function _overlayData(groups: OverlayGroup[], keep: number[], maxPoints: number) {
  const points: _Point[] = [];
  const hover = new Map<number, Record<string, string | number>>();
  let downsampled = false;
  let first = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  for (const g of groups) {
    const s = g.series;
    const idx = downsampleIndices(s.values, maxPoints, keep.map((k) => indexOfStep(s.steps, k)));
    if (idx.length < s.steps.length) downsampled = true;
    for (const i of idx) {
      const step = s.steps[i];
      const v = s.values[i];
      first = Math.min(first, step);
      last = Math.max(last, step);
      // JSON has no NaN: a non-finite value is a gap in the line.
      points.push({ step, phase: g.label, value: Number.isFinite(v) ? v : null });
      const row = hover.get(step) ?? { step };
      row[g.label] = exact(v);
      hover.set(step, row);
    }
  }
  if (points.length === 0) {
    first = 0;
    last = 1;
  }
  const rows = [...hover.values()].sort((x, y) => (x.step as number) - (y.step as number));
  return { points, hover: rows, downsampled, first, last };
}

/** The panels: around and after the save above the whole run, or the whole run alone. */
function _views(o: _Overlay, first: number): ChartSpec[] {
  const { saveAt, last } = o;
  const after = saveAt !== null && last > saveAt;
  const pad = Math.max(2, Math.round(0.05 * (last - (saveAt ?? first))));
  const detailFrom = after ? Math.max(first, saveAt! - pad) : first;
  if (!after) {
    return [_panel(o, "run", first, HEIGHT, `steps ${exact(first)}–${exact(last)}`, true)];
  }
  return [
    _panel(
      o,
      "after",
      detailFrom,
      HEIGHT,
      `steps ${exact(detailFrom)}–${exact(last)}: around and after the save`,
      true,
    ),
    _panel(
      o,
      "run",
      first,
      Math.round(HEIGHT * 0.4),
      `whole run, steps ${exact(first)}–${exact(last)}`,
      false,
    ),
  ];
}

/** The subtitle lines: the noise band, the series drawn once, the downsampling. */
function _subtitle(
  banded: boolean,
  groups: OverlayGroup[],
  downsampledTo: number | null,
): string[] {
  const subtitle: string[] = [];
  if (banded) subtitle.push("grey band: noise floor (min–max of the baseline and its repeats)");
  const merged = groups.filter((g) => g.phases.length > 1);
  if (merged.length > 0) {
    subtitle.push(
      "drawn once (bit-identical): " + merged.map((g) => g.phases.join(" = ")).join("; "),
    );
  }
  if (downsampledTo !== null) {
    subtitle.push(`display downsampled to about ${downsampledTo} points per line`);
  }
  return subtitle;
}

/** One panel: the steps from `from` on, its value axis fitted to them. */
function _panel(
  o: _Overlay,
  id: string,
  from: number,
  height: number,
  heading: string,
  labelled: boolean,
): ChartSpec {
  const inWindow = (v: { step: number }) => v.step >= from;
  const values = [
    ...o.points.filter(inWindow).map((p) => p.value),
    ...o.band.filter(inWindow).flatMap((p) => [p.lo, p.hi]),
  ].filter((v): v is number => v !== null && Number.isFinite(v));
  const y = valueAxis(o.metric, values, o.logScale);
  const dense = o.points.filter(inWindow).length > DASH_LIMIT * o.groups.length;
  const x = stepAxis([from, o.last]);
  const filter = [{ filter: `datum.step >= ${from}` }];
  const layers: ChartSpec[] = [];
  if (o.band.length > 0) layers.push(envelopeLayer(filter, x, y));
  layers.push(baselineLayer(o, filter, x, y), seriesLayer(o, id, filter, x, y, dense));
  if (o.saveAt !== null && o.saveAt >= from) layers.push(saveRule(o.saveAt, x));
  if (o.marks.length > 0) layers.push(divergenceMarkers(o.marks, x, labelled));
  layers.push(hoverLayer(id, filter, x));
  return { title: heading, width: WIDTH, height, layer: layers };
}

function sameSeries(x: OverlaySeries, y: OverlaySeries): boolean {
  if (x.steps.length !== y.steps.length) return false;
  for (let i = 0; i < x.steps.length; i++) {
    if (x.steps[i] !== y.steps[i] || !Object.is(x.values[i], y.values[i])) {
      // +0 and -0 are the same loss.
      if (!(x.steps[i] === y.steps[i] && x.values[i] === y.values[i])) return false;
    }
  }
  return true;
}

/** The y encoding of a panel: scale by {@link chooseValueScale}, labels by `stat()`. */
function valueAxis(metric: string, values: number[], forceLog: boolean): ChartSpec {
  const kind = chooseValueScale(values, forceLog);
  const field = { field: "value", type: "quantitative", title: metric };
  if (kind === "log") {
    return { ...field, title: `${metric} (log)`, ...logAxis(decadeDomain(values) ?? [0.1, 10]) };
  }
  if (kind === "symlog") {
    return {
      ...field,
      title: `${metric} (symlog)`,
      scale: { type: "symlog" },
      axis: { labelExpr: STAT_LABEL_EXPR },
    };
  }
  // A fixed domain from this panel's own values: zooming the step axis never empties the view.
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (!Number.isFinite(lo)) [lo, hi] = [0, 1];
  const margin = (hi - lo) * 0.05 || Math.abs(hi) * 0.05 || 1;
  return {
    ...field,
    scale: { domain: [lo - margin, hi + margin], nice: false, zero: false },
    axis: { labelExpr: STAT_LABEL_EXPR },
  };
}
