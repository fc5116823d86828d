/**
 * Per-step difference of one comparison. The first panel is `b − a` with a zero rule (and, for
 * tolerance and drift lanes, the allowed ±envelope as a band); the second is the magnitude:
 * the ULP distance in the series' own precision for exact lanes (symlog, integer ticks), and
 * log |b − a| with the envelope line for tolerance and drift lanes, exact zeros drawn in a strip
 * beneath it instead of at log(0). Steps outside what the lane allows are red, the first
 * divergent step is marked. A pair that is bit-identical at every step is one short strip that
 * says so, not an empty axis.
 *
 * @module
 */

import { count, exact, stat, ulps } from "../format/numbers.ts";
import { ulpDistanceIn, type UlpUnit, ulpUnitOf } from "../parity/mod.ts";
import type { Lane } from "../types/judge_settings.ts";
import type { DriftSummary } from "../types/summary.ts";
import {
  decadeDomain,
  logAxis,
  lookupLabelExpr,
  STAT_LABEL_EXPR,
  ulpTicks,
} from "./_axis_labels.ts";
import { allowedDifference, envelopeLabel } from "./_envelope.ts";
import { stripKinds, stripRuns, stripView } from "./_strip.ts";
import { DEFAULT_MAX_POINTS, downsampleIndices } from "./downsample.ts";
import {
  type ChartSpec,
  CONFIG,
  differenceTooltip,
  FAIL_COLOR,
  finiteOrNull,
  HEIGHT,
  indexOfStep,
  SCHEMA_URL,
  stepAxis,
  WIDTH,
  xZoom,
  ZOOM_HELP,
} from "./_spec.ts";
import type { Series } from "./losses_table.ts";

/** Inputs of {@link differenceSpec}. */
export interface DifferenceInput {
  /** Comparison name (title). */
  name: string;
  /** Reference phase. */
  a: string;
  /** Candidate phase. */
  b: string;
  /** Metric compared. */
  metric: string;
  /** Lane: exact lanes get the ULP panel, the others log |b − a| with their envelope. */
  lane: Lane;
  /** Series of `a`. */
  seriesA: Series;
  /** Series of `b`. */
  seriesB: Series;
  /** Window first step (inclusive); null for all shared steps. */
  firstStep?: number | null;
  /** Window last step (inclusive). */
  lastStep?: number | null;
  /** Step to mark as the first divergence. */
  firstDivergentStep?: number | null;
  /** Tolerance lane: relative tolerance. */
  rtol?: number;
  /** Tolerance lane: absolute tolerance. */
  atol?: number;
  /** Drift lane: what it measured (its early ULP limit and envelope are drawn). */
  drift?: DriftSummary;
  /** Display budget. */
  maxPoints?: number;
}

/** One aligned step of a comparison. */
export interface DifferenceRow {
  /** Step. */
  step: number;
  /** Value of `a`. */
  a: number;
  /** Value of `b`. */
  b: number;
  /** `b − a`. */
  diff: number;
  /** ULP distance, in the unit of {@link ulpUnitOfRows}. */
  ulp: number;
}

/** The ULP unit of aligned rows: float32 when every value on both sides is a float32. */
export function ulpUnitOfRows(rows: readonly DifferenceRow[]): UlpUnit {
  return ulpUnitOf(rows.flatMap((r) => [r.a, r.b]));
}

/**
 * Aligns two series on the steps both have, inside the window, and computes `b − a` and the
 * ULP distance (float32 ULPs when every value is a float32, else float64).
 */
export function alignDifference(
  seriesA: Series,
  seriesB: Series,
  firstStep?: number | null,
  lastStep?: number | null,
): DifferenceRow[] {
  const byStep = new Map<number, number>();
  for (let i = 0; i < seriesA.steps.length; i++) byStep.set(seriesA.steps[i], seriesA.values[i]);
  const rows: DifferenceRow[] = [];
  for (let i = 0; i < seriesB.steps.length; i++) {
    const step = seriesB.steps[i];
    if (firstStep !== null && firstStep !== undefined && step < firstStep) continue;
    if (lastStep !== null && lastStep !== undefined && step > lastStep) continue;
    const a = byStep.get(step);
    if (a === undefined) continue;
    const b = seriesB.values[i];
    rows.push({ step, a, b, diff: b - a, ulp: 0 });
  }
  const unit = ulpUnitOfRows(rows);
  for (const r of rows) r.ulp = ulpDistanceIn(unit, r.a, r.b);
  return rows;
}

/**
 * True when the rows hold at least one step and `b` equals `a` bit for bit at every step (the
 * chart would be a flat zero).
 */
export function isIdentical(rows: readonly DifferenceRow[]): boolean {
  // NaN on both sides is no evidence of equality: it is not "identical".
  return rows.length > 0 && rows.every((r) => r.a === r.b);
}

/**
 * Builds the difference spec (pure; data inlined).
 *
 * @example
 * ```ts
 * import { differenceSpec } from "./difference.ts";
 * const spec = differenceSpec({
 *   name: "baseline~resume", a: "baseline", b: "resume", metric: "loss", lane: "exact",
 *   seriesA: { steps: [1, 2], values: [2, 1.5] },
 *   seriesB: { steps: [1, 2], values: [2, 1.25] },
 *   firstDivergentStep: 2,
 * });
 * Array.isArray(spec.vconcat); // true: b − a, then the ULP panel
 * ```
 */
export function differenceSpec(input: DifferenceInput): ChartSpec {
  const maxPoints = input.maxPoints ?? DEFAULT_MAX_POINTS;
  const rows = alignDifference(input.seriesA, input.seriesB, input.firstStep, input.lastStep);
  const unit = ulpUnitOfRows(rows);
  const steps = rows.map((r) => r.step);
  const heading = `${input.name}: ${input.metric} difference (${input.lane} lane)`;
  const domain: [number, number] | undefined = rows.length > 0
    ? [steps[0], steps[steps.length - 1]]
    : undefined;
  if (isIdentical(rows)) return identicalSpec(input, rows, heading, domain!);

  const allowed = allowedDifference(input, rows);
  const shown = _shownIndices(input, rows, indexOfStep(steps, input.firstDivergentStep), maxPoints);
  const values = _differenceValues(rows, shown, allowed, unit);
  const strip = stripRuns(rows);
  const d: _Difference = {
    input,
    rows,
    values,
    allowed,
    domain,
    unit,
    tooltip: differenceTooltip(input.a, input.b),
    divergence: input.firstDivergentStep ?? null,
    dense: values.length > 200,
    strip,
    hasStrip: input.lane !== "exact" && strip.length > 0,
  };
  const magnitude = input.lane === "exact" ? [_ulpPanel(d)] : _magnitudePanels(d);
  const subtitle = [
    `b − a = ${input.b} − ${input.a}; max |b − a| ${stat(maxAbs(rows))}, ` +
    `max ${ulps(maxFinite(rows.map((r) => r.ulp)), unit)}; red: steps the lane does not allow`,
  ];
  const envelope = envelopeLabel(input);
  if (envelope) subtitle.push(`blue band: ${envelope}`);
  if (d.hasStrip) {
    subtitle.push(`"b = a" strip: steps where b equals a bit for bit (log(0) has no place)`);
  }
  if (shown.length < rows.length) subtitle.push(`display downsampled to about ${maxPoints} points`);
  return {
    $schema: SCHEMA_URL,
    description: ZOOM_HELP,
    title: { text: heading, subtitle },
    config: CONFIG,
    vconcat: [_linearPanel(d), ...magnitude],
    resolve: { scale: { x: "shared" } },
  };
}

/** One drawn step of the difference chart: values, flags and their printed forms. */
type _DifferenceValue = ReturnType<typeof _differenceValues>[number];

/** What every panel of one difference chart shares. */
interface _Difference {
  input: DifferenceInput;
  rows: DifferenceRow[];
  /** The drawn (downsampled) steps. */
  values: _DifferenceValue[];
  /** The allowed |b − a| per row, or null for an exact lane. */
  allowed: number[] | null;
  domain: [number, number] | undefined;
  unit: UlpUnit;
  tooltip: ChartSpec[];
  divergence: number | null;
  /** Many points: drawn smaller. */
  dense: boolean;
  strip: ReturnType<typeof stripRuns>;
  /** A "b = a" strip under the log panel. */
  hasStrip: boolean;
}

/** The row indices drawn: downsampled, keeping the extremes and the divergent step `keep`. */
function _shownIndices(
  input: DifferenceInput,
  rows: DifferenceRow[],
  keep: number,
  maxPoints: number,
): number[] {
  // Exact lanes draw b − a and the ULP distance from the same rows: split the budget between the
  // extremes of both. The log |b − a| panel of the other lanes needs no share of its own: the
  // largest |b − a| of a bucket is its minimum or its maximum b − a.
  const split = input.lane === "exact" && rows.length > maxPoints;
  const budget = split ? Math.floor(maxPoints / 2) : maxPoints;
  const idx = new Set(downsampleIndices(rows.map((r) => r.diff), budget, [keep]));
  if (split) {
    for (const i of downsampleIndices(rows.map((r) => r.ulp), budget, [keep])) idx.add(i);
  }
  return [...idx].sort((x, y) => x - y);
}

/** The inline data of the drawn rows. */
function _differenceValues(
  rows: DifferenceRow[],
  shown: number[],
  allowed: number[] | null,
  unit: UlpUnit,
) {
  return shown.map((i) => {
    const r = rows[i];
    const abs = Math.abs(r.diff);
    const limit = allowed ? allowed[i] : 0;
    return {
      step: r.step,
      a: finiteOrNull(r.a),
      b: finiteOrNull(r.b),
      diff: finiteOrNull(r.diff),
      ulp: finiteOrNull(r.ulp),
      // Log axes cannot hold 0: exact zeros go to the strip, never to log(0).
      abs: abs > 0 && Number.isFinite(abs) ? abs : null,
      allowed: allowed ? finiteOrNull(limit) : null,
      neg_allowed: allowed ? finiteOrNull(-limit) : null,
      outside: !(abs <= limit) && !(r.a === r.b),
      a_text: exact(r.a),
      b_text: exact(r.b),
      diff_text: stat(r.diff),
      ulp_text: ulps(r.ulp, unit),
      allowed_text: allowed ? stat(limit) : "0 (exact)",
    };
  });
}

/** The points of a panel, red where the lane does not allow the step. */
function _pointsLayer(d: _Difference, y: ChartSpec, x: ChartSpec): ChartSpec {
  const pointColor = {
    condition: { test: "datum.outside", value: FAIL_COLOR },
    value: "#1f77b4",
  };
  return {
    mark: { type: "point", filled: true, size: d.dense ? 10 : 30, opacity: 1 },
    encoding: { x, y, color: pointColor, tooltip: d.tooltip },
  };
}

/** The red rule at the first divergent step (none without one); `label`: named beside it. */
function _divergenceMarker(d: _Difference, x: ChartSpec, label: boolean): ChartSpec[] {
  const divergence = d.divergence;
  return divergence === null ? [] : [{
    data: { values: [{ step: divergence, label: `first divergence @ ${exact(divergence)}` }] },
    layer: [
      { mark: { type: "rule", color: FAIL_COLOR, strokeWidth: 1.5 }, encoding: { x } },
      ...(label
        ? [{
          mark: {
            type: "text",
            align: "left",
            baseline: "top",
            dx: 4,
            dy: 4,
            y: 0,
            color: FAIL_COLOR,
          },
          encoding: { x, text: { field: "label" } },
        }]
        : []),
    ],
  }];
}

/** The b − a panel: a zero rule, the allowed band, the line and its points. */
function _linearPanel(d: _Difference): ChartSpec {
  const linearX = stepAxis(d.domain, false);
  // The data sets the range, not the envelope: a drift envelope 100× the differences would
  // flatten them (the band is clipped to the plot; the log panel shows it whole).
  const finite = d.rows.map((r) => r.diff).filter((v) => Number.isFinite(v));
  const lo = Math.min(0, ...finite);
  const hi = Math.max(0, ...finite);
  const margin = (hi - lo) * 0.08 || 1;
  const linearY = {
    field: "diff",
    type: "quantitative",
    title: `b − a (${d.input.metric})`,
    scale: { domain: [lo - margin, hi + margin], nice: false },
    axis: { labelExpr: STAT_LABEL_EXPR },
  };
  return {
    width: WIDTH,
    height: Math.round(HEIGHT * 0.6),
    layer: [
      {
        data: { values: [{ zero: 0 }] },
        mark: { type: "rule", color: "#888" },
        encoding: { y: { field: "zero", type: "quantitative" } },
      },
      {
        data: { values: d.values },
        layer: [
          ...(d.allowed ? [_allowedBand(linearX, linearY)] : []),
          {
            params: [xZoom("zoom_diff")],
            mark: { type: "line", color: "#1f77b4", strokeWidth: 1.5 },
            encoding: { x: linearX, y: linearY },
          },
          _pointsLayer(d, linearY, linearX),
        ],
      },
      ..._divergenceMarker(d, linearX, true),
    ],
  };
}

/** The allowed band ±limit of the b − a panel, clipped to the plot. */
function _allowedBand(x: ChartSpec, y: ChartSpec): ChartSpec {
  return {
    mark: {
      type: "area",
      color: "#9ecae1",
      opacity: 0.35,
      interpolate: "step",
      clip: true,
    },
    encoding: {
      x,
      y: { ...y, field: "neg_allowed" },
      y2: { field: "allowed" },
    },
  };
}

/** The ULP-distance panel of an exact lane, with few integer ticks. */
function _ulpPanel(d: _Difference): ChartSpec {
  const ticks = ulpTicks(Math.max(...d.rows.map((r) => (Number.isFinite(r.ulp) ? r.ulp : 0))));
  const ulpX = stepAxis(d.domain);
  const ulpY = {
    field: "ulp",
    type: "quantitative",
    title: `ULP distance (${d.unit})`,
    scale: { type: "symlog", constant: 1, domain: [0, ticks[ticks.length - 1]], nice: false },
    axis: { values: ticks, labelExpr: lookupLabelExpr(ticks, count) },
  };
  return {
    width: WIDTH,
    height: Math.round(HEIGHT * 0.5),
    layer: [
      {
        data: { values: d.values },
        layer: [
          {
            params: [xZoom("zoom_ulp")],
            mark: { type: "line", color: "#ff7f0e", strokeWidth: 1.5 },
            encoding: { x: ulpX, y: ulpY },
          },
          _pointsLayer(d, ulpY, ulpX),
        ],
      },
      ..._divergenceMarker(d, ulpX, false),
    ],
  };
}

/** The log |b − a| panel of a tolerance or drift lane, and its "b = a" strip when it has one. */
function _magnitudePanels(d: _Difference): ChartSpec[] {
  const yDomain = decadeDomain([...d.values.map((v) => v.abs), ...(d.allowed ?? [])]) ??
    [1e-8, 1];
  const logX = stepAxis(d.domain, !d.hasStrip);
  const logY = {
    field: "abs",
    type: "quantitative",
    title: "|b − a| (log)",
    ...logAxis(yDomain),
  };
  const panels: ChartSpec[] = [{
    width: WIDTH,
    height: Math.round(HEIGHT * 0.6),
    layer: [
      {
        data: { values: d.values.map((v) => ({ ...v, floor: yDomain[0] })) },
        layer: [
          ...(d.allowed
            ? [{
              mark: { type: "area", color: "#9ecae1", opacity: 0.35, interpolate: "step" },
              encoding: { x: logX, y: { ...logY, field: "allowed" }, y2: { field: "floor" } },
            }, {
              mark: { type: "line", color: "#3182bd", strokeDash: [4, 3], interpolate: "step" },
              encoding: { x: logX, y: { ...logY, field: "allowed" } },
            }]
            : []),
          {
            params: [xZoom("zoom_abs")],
            mark: { type: "line", color: "#1f77b4", strokeWidth: 1 },
            encoding: { x: logX, y: logY },
          },
          _pointsLayer(d, logY, logX),
        ],
      },
      ..._divergenceMarker(d, logX, false),
    ],
  }];
  if (d.hasStrip) {
    panels.push(stripView({ values: d.strip }, stepAxis(d.domain), WIDTH, stripKinds(d.strip)));
  }
  return panels;
}

/** The chart of a pair that never differs: one bar and a sentence, no value axis. */
function identicalSpec(
  input: DifferenceInput,
  rows: DifferenceRow[],
  heading: string,
  domain: [number, number],
): ChartSpec {
  const strip = stripRuns(rows);
  return {
    $schema: SCHEMA_URL,
    title: {
      text: heading,
      subtitle: [
        `identical at all ${count(rows.length)} steps (${exact(domain[0])}–${
          exact(domain[1])
        }): ${input.b} = ${input.a} bit for bit`,
      ],
    },
    config: CONFIG,
    ...stripView({ values: strip }, stepAxis(domain), WIDTH, stripKinds(strip)),
  };
}

function maxAbs(rows: readonly DifferenceRow[]): number {
  return maxFinite(rows.map((r) => Math.abs(r.diff)));
}

function maxFinite(values: number[]): number {
  let m = 0;
  for (const v of values) if (Number.isFinite(v) && v > m) m = v;
  return m;
}
