/**
 * The two charts of `b − a`, one module since both draw the same aligned rows, the same |b − a|
 * points red where the lane does not allow them, the same allowed envelope and the same step
 * rules.
 *
 * The difference chart, one per comparison. The first panel is `b − a` with a zero rule (and, for
 * tolerance and drift lanes, the allowed ±envelope as a band); the second is the magnitude:
 * the ULP distance in the series' own precision for exact lanes (symlog, integer ticks), and
 * log |b − a| with the envelope line for tolerance and drift lanes, exact zeros drawn in a strip
 * beneath it instead of at log(0). Steps outside what the lane allows are red, the first
 * divergent step is marked. A pair that is bit-identical at every step is one short strip that
 * says so, not an empty axis.
 *
 * The divergence chart, first of a run's charts: where each resume path leaves its reference.
 * One row of small multiples per resume path (culprits first, from `divergencePanels()`), each
 * with |b − a| per step on a shared log axis, the |b − a| its lane allows (tolerance:
 * atol + rtol·|a|; drift: the early float32-ULP limit, then the envelope), the noise floor of the
 * repeated baselines, the save step and the first divergent step. Steps where b = a exactly sit
 * in a strip beneath the log axis (log(0) has no place on it). Long windows get a second column
 * zoomed on the resume: from a few steps before the save to a few after the first divergence.
 * Why |b − a| and not ULPs on its axis: every threshold a lane applies (tolerance, drift
 * envelope, noise floor) is an absolute difference, so each one is a line the points cross; the
 * ULP distance (in the series' own precision) is in every tooltip and in each row's header.
 *
 * @module
 */

import { comparisonUlpText, count, exact, stat, ulps } from "../format/mod.ts";
import { ulpDistanceIn, type UlpUnit, ulpUnitOf } from "../parity/mod.ts";
import type { ComparisonSummary, DriftSummary, Lane } from "../types/mod.ts";
import {
  decadeDomain,
  logAxis,
  lookupLabelExpr,
  STAT_LABEL_EXPR,
  ulpTicks,
} from "./_axis_labels.ts";
import { allowedDifference, envelopeLabel } from "./_envelope.ts";
import { IDENTICAL_LABEL, stripKinds, type StripRun, stripRuns, stripView } from "./_strip.ts";
import { type BandPoint, DEFAULT_MAX_POINTS, downsampleIndices } from "./downsample.ts";
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
    const limit = allowed ? allowed[i] : 0;
    return {
      ..._drawnStep(r, limit, allowed !== null, unit),
      a: finiteOrNull(r.a),
      b: finiteOrNull(r.b),
      diff: finiteOrNull(r.diff),
      ulp: finiteOrNull(r.ulp),
      allowed: allowed ? finiteOrNull(limit) : null,
      neg_allowed: allowed ? finiteOrNull(-limit) : null,
    };
  });
}

/**
 * What both charts draw of one step: |b − a| for the log axis, whether the lane allows it (limit
 * `limit`), and the tooltip's texts.
 */
function _drawnStep(r: DifferenceRow, limit: number, hasLimit: boolean, unit: UlpUnit) {
  const abs = Math.abs(r.diff);
  return {
    step: r.step,
    // Log axes cannot hold 0: exact zeros go to the strip, never to log(0).
    abs: abs > 0 && Number.isFinite(abs) ? abs : null,
    outside: !(abs <= limit) && !(r.a === r.b),
    a_text: exact(r.a),
    b_text: exact(r.b),
    diff_text: stat(r.diff),
    ulp_text: ulps(r.ulp, unit),
    allowed_text: hasLimit ? stat(limit) : "0 (exact lane)",
  };
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
  const step = d.divergence;
  return step === null ? [] : [_ruleLayer(
    {
      step,
      color: FAIL_COLOR,
      dash: [],
      label: label ? `first divergence @ ${exact(step)}` : "",
      top: true,
    },
    x,
    0,
  )];
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
          ...(d.allowed ? _envelopeLayers({}, logX, logY) : []),
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

/** One panel of the divergence chart. */
export interface DivergencePanel {
  /** Panel name: the resume path, with `(= n more)` when other paths are drawn by it. */
  label: string;
  /** Every resume path this panel stands for, the drawn one first. */
  phases: string[];
  /** The path broke: a failing comparison blames it. */
  culprit: boolean;
  /** The comparison drawn. */
  comparison: ComparisonSummary;
  /** Its aligned rows (window only). */
  rows: DifferenceRow[];
}

/** Inputs of {@link divergenceSpec}. */
export interface DivergenceInput {
  /** Chart title. */
  title: string;
  /** Step after which the split phase saved. */
  saveAt?: number | null;
  /** Panels, from `divergencePanels()`. */
  panels: DivergencePanel[];
  /** Paths bit-identical to their reference (named in the subtitle, not drawn). */
  identical?: string[];
  /** Noise floor: per-step min/max of the baseline and its repeats (loss panels only). */
  noise?: BandPoint[] | null;
  /** Display budget per panel. */
  maxPoints?: number;
}

/** Steps shown before the save and after the first divergence in the zoomed column. */
export const INSET_STEPS = 5;

/**
 * The zoomed column's step range for one panel: `[save − k, first divergence + k]`, or, when the
 * first divergence is far from the save, `[d − 4k, d + 4k]` around it; clamped to `domain`.
 */
export function insetRange(
  saveAt: number | null | undefined,
  firstDivergent: number | null,
  domain: [number, number],
): [number, number] | null {
  if (saveAt === null || saveAt === undefined) return null;
  const k = INSET_STEPS;
  const d = firstDivergent ?? saveAt + 1;
  const [lo, hi] = d - saveAt <= 8 * k ? [saveAt - k, d + k] : [d - 4 * k, d + 4 * k];
  const from = Math.max(domain[0], lo);
  const to = Math.min(domain[1], hi);
  return to > from ? [from, to] : null;
}

const LINE = "#4a7bb0";
const POINT = "#1f77b4";
const ENVELOPE = "#9ecae1";

/**
 * Builds the divergence spec, or null when there is no panel (nothing failed and no tolerance
 * or drift lane was used: the chart would say nothing).
 *
 * @example
 * ```ts
 * import { divergenceSpec } from "./difference.ts";
 * divergenceSpec({ title: "quickstart", saveAt: 20, panels: [] }); // null
 * ```
 */
export function divergenceSpec(input: DivergenceInput): ChartSpec | null {
  const panels = input.panels.filter((p) => p.rows.length > 0);
  if (panels.length === 0) return null;
  const maxPoints = input.maxPoints ?? DEFAULT_MAX_POINTS;
  const saveAt = input.saveAt ?? null;
  const domain = _stepDomain(panels, saveAt);

  const noise = (input.noise ?? []).map((p) => ({ step: p.step, spread: p.hi - p.lo }));
  const noiseDrawn = noise.filter((p) => p.spread > 0 && Number.isFinite(p.spread));

  const prepared = panels.map((p) => preparePanel(p, maxPoints));
  const yDomain = decadeDomain([
    ...prepared.flatMap((p) => p.values.map((v) => v.abs)),
    ...prepared.flatMap((p) => p.values.map((v) => v.allowed)),
    ...noiseDrawn.map((p) => p.spread),
  ]) ?? [1e-8, 1];

  const insets = prepared.map((p) =>
    insetRange(saveAt, p.panel.comparison.first_divergent_step, domain)
  );
  const widest = Math.max(0, ...insets.map((r) => (r ? r[1] - r[0] : 0)));
  // A zoom only where it zooms: a short window already shows every step.
  const zoomed = widest > 0 && domain[1] - domain[0] > Math.max(4 * widest, 60);
  const mainWidth = zoomed ? Math.round(WIDTH * 0.68) : WIDTH;
  const grid: _Grid = {
    domain,
    insets,
    zoomed,
    mainWidth,
    insetWidth: WIDTH - mainWidth - 20,
    height: panels.length <= 2 ? 150 : 110,
    y: { field: "abs", type: "quantitative", title: "|b − a|", ...logAxis(yDomain, 5) },
    saveAt,
    noise: noiseDrawn.length > 0,
    strips: stripKinds(prepared.flatMap((p) => p.strip)),
    count: prepared.length,
  };

  const datasets: Record<string, unknown[]> = {};
  if (noiseDrawn.length > 0) {
    datasets.noise = noiseDrawn.map((p) => ({ ...p, floor: yDomain[0] }));
  }
  const rows = prepared.map((p, i) => {
    datasets[`panel_${i}`] = p.values.map((v) => ({ ...v, floor: yDomain[0] }));
    datasets[`strip_${i}`] = p.strip;
    return _panelRow(grid, p, i);
  });
  return {
    $schema: SCHEMA_URL,
    description: ZOOM_HELP,
    title: { text: input.title, subtitle: _subtitle(input, panels, prepared, noise, grid) },
    config: CONFIG,
    datasets,
    vconcat: rows,
    spacing: 16,
  };
}

/** The layout every row of one divergence chart shares. */
interface _Grid {
  /** The step range of the main column. */
  domain: [number, number];
  /** Each row's zoom range (null: none). */
  insets: ([number, number] | null)[];
  /** Whether rows have a zoomed column on the right. */
  zoomed: boolean;
  mainWidth: number;
  insetWidth: number;
  height: number;
  /** The shared log |b − a| encoding. */
  y: ChartSpec;
  saveAt: number | null;
  /** Whether a noise floor is drawn. */
  noise: boolean;
  strips: ReturnType<typeof stripKinds>;
  /** Number of rows. */
  count: number;
}

/** The steps drawn: every panel's, from the save when it precedes them. */
function _stepDomain(panels: DivergencePanel[], saveAt: number | null): [number, number] {
  let first = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  for (const p of panels) {
    first = Math.min(first, p.rows[0].step);
    last = Math.max(last, p.rows[p.rows.length - 1].step);
  }
  // The save step is the left edge when it precedes the window: the reader sees where it resumed.
  return [
    saveAt !== null && saveAt < first ? saveAt : first,
    Math.max(last, first + 1),
  ];
}

/** One resume path's row: its header, the whole window and, when zoomed, the inset. */
function _panelRow(g: _Grid, p: PreparedPanel, i: number): ChartSpec {
  const isLast = i === g.count - 1;
  const plot = (range: [number, number], width: number, zoom: string, inset: boolean) => ({
    vconcat: [
      plotView(p, i, {
        range,
        width,
        height: g.height,
        y: g.y,
        zoom,
        inset,
        saveAt: g.saveAt,
        saveLabel: i === 0,
        noise: g.noise,
      }),
      stripView({ name: `strip_${i}` }, stripAxis(range, width, isLast), width, g.strips),
    ],
    spacing: 2,
    resolve: { scale: { x: "shared" } },
  });
  const columns: ChartSpec[] = [plot(g.domain, g.mainWidth, `zoom_${i}`, false)];
  const inset = g.insets[i];
  if (g.zoomed && inset) columns.push(plot(inset, g.insetWidth, `zoom_inset_${i}`, true));
  else if (g.zoomed) {
    columns.push({ width: g.insetWidth, height: g.height, mark: "text", data: { values: [] } });
  }
  return {
    title: {
      text: header(p.panel),
      color: p.panel.culprit ? FAIL_COLOR : "#333",
      fontSize: 12,
      anchor: "start",
      offset: 4,
    },
    hconcat: columns,
    spacing: 20,
  };
}

/** The subtitle lines: what is drawn, the allowed bands, the noise floor, what is left out. */
function _subtitle(
  input: DivergenceInput,
  panels: DivergencePanel[],
  prepared: PreparedPanel[],
  noise: { spread: number }[],
  g: _Grid,
): string[] {
  const lanes = new Set(panels.map((p) => p.comparison.lane));
  const early = [
    ...new Set(panels.flatMap((p) => p.comparison.drift?.early_limit_ulp32 ?? [])),
  ].join("/");
  const allowed = [
    ...(lanes.has("tolerance") ? ["tolerance: atol + rtol·|a|"] : []),
    ...(early ? [`drift: ${early} f32 ULPs of a early, then the envelope`] : []),
  ];
  const subtitle = [
    "|b − a| per step (log axis), one row per resume path, culprits first; red: steps the lane " +
    "does not allow",
  ];
  if (allowed.length > 0) subtitle.push(`blue band: allowed |b − a| (${allowed.join("; ")})`);
  if (g.noise) {
    subtitle.push("grey: noise floor (spread of the baseline and its repeats)");
  } else if (noise.length > 0) {
    subtitle.push("noise floor: the repeated baselines are bit-identical (0)");
  }
  subtitle.push(
    `"${IDENTICAL_LABEL}" strip: steps where b equals a bit for bit (log(0) has no place)`,
  );
  if (g.zoomed) {
    subtitle.push(
      `right: zoom on the resume, from ${INSET_STEPS} steps before the save to ${INSET_STEPS} ` +
        "after the first divergence",
    );
  }
  if ((input.identical ?? []).length > 0) {
    subtitle.push(`bit-identical to their reference (not drawn): ${input.identical!.join(", ")}`);
  }
  if (prepared.some((p) => p.downsampled)) {
    subtitle.push(
      `display downsampled to about ${input.maxPoints ?? DEFAULT_MAX_POINTS} points per row`,
    );
  }
  return subtitle;
}

/** One drawn step of a divergence panel. */
type PanelValue = ReturnType<typeof _drawnStep> & { allowed: number | null };

interface PreparedPanel {
  panel: DivergencePanel;
  values: PanelValue[];
  strip: StripRun[];
  downsampled: boolean;
}

function preparePanel(panel: DivergencePanel, maxPoints: number): PreparedPanel {
  const rows = panel.rows;
  const unit = ulpUnitOfRows(rows);
  const allowed = allowedDifference(panel.comparison, rows);
  const steps = rows.map((r) => r.step);
  const keep = [indexOfStep(steps, panel.comparison.first_divergent_step)];
  const idx = downsampleIndices(rows.map((r) => Math.abs(r.diff)), maxPoints, keep);
  const values = idx.map((i): PanelValue => {
    const limit = allowed ? allowed[i] : 0;
    return {
      ..._drawnStep(rows[i], limit, allowed !== null, unit),
      // A log axis has no 0: an exact lane's limit is not drawn.
      allowed: allowed && Number.isFinite(limit) && limit > 0 ? limit : null,
    };
  });
  return { panel, values, strip: stripRuns(rows), downsampled: idx.length < rows.length };
}

function header(panel: DivergencePanel): string {
  const c = panel.comparison;
  const at = c.first_divergent_step === null
    ? ""
    : `, first divergence @ ${exact(c.first_divergent_step)}`;
  return `${panel.label}: ${c.verdict}${at} — ${c.lane} lane vs ${c.a}; ` +
    `max |b − a| ${stat(c.max_abs)} = ${comparisonUlpText(c)}`;
}

/** How one plot of a row is drawn. */
interface _PlotOptions {
  range: [number, number];
  width: number;
  height: number;
  y: ChartSpec;
  zoom: string;
  inset: boolean;
  saveAt: number | null;
  saveLabel: boolean;
  noise: boolean;
}

function plotView(prepared: PreparedPanel, index: number, o: _PlotOptions): ChartSpec {
  const c = prepared.panel.comparison;
  const x = stepAxis(o.range, false, o.width);
  const data = { name: `panel_${index}` };
  // The zoomed column draws only its steps: filtering is far cheaper to rasterise than clipping.
  const inRange = [{ filter: { field: "step", range: o.range } }];
  const layers: ChartSpec[] = [];
  // The noise floor is measured on the loss only.
  if (o.noise && c.metric === "loss") layers.push(_noiseLayer(inRange, x, o.y));
  if (prepared.values.some((v) => v.allowed !== null)) {
    layers.push(..._envelopeLayers({ data, transform: inRange }, x, o.y));
  }
  const dense = prepared.values.filter((v) => v.step >= o.range[0] && v.step <= o.range[1])
    .length > 150;
  layers.push({
    data,
    params: [xZoom(o.zoom)],
    transform: inRange,
    mark: { type: "line", color: LINE, strokeWidth: 1 },
    encoding: { x, y: o.y },
  }, {
    data,
    transform: inRange,
    mark: { type: "point", filled: true, size: dense ? 9 : 28, opacity: 1 },
    encoding: {
      x,
      y: o.y,
      color: { condition: { test: "datum.outside", value: FAIL_COLOR }, value: POINT },
      tooltip: differenceTooltip(c.a, c.b),
    },
  });
  for (const r of _stepRules(c, o)) {
    if (r.step < o.range[0] || r.step > o.range[1]) continue;
    layers.push(_ruleLayer(r, x, o.height));
  }
  return { width: o.width, height: o.height, layer: layers };
}

/** The grey noise floor (spread of the baseline and its repeats). */
function _noiseLayer(inRange: ChartSpec[], x: ChartSpec, y: ChartSpec): ChartSpec {
  return {
    data: { name: "noise" },
    transform: inRange,
    mark: { type: "area", color: "#9e9e9e", opacity: 0.45, interpolate: "step" },
    encoding: { x, y: { ...y, field: "spread" }, y2: { field: "floor" } },
  };
}

/**
 * The allowed |b − a| on a log axis: a blue band from the axis floor and its dashed edge. `from`:
 * their data and transform (none: the parent's data).
 */
function _envelopeLayers(from: ChartSpec, x: ChartSpec, y: ChartSpec): ChartSpec[] {
  return [{
    ...from,
    mark: { type: "area", color: ENVELOPE, opacity: 0.4, interpolate: "step" },
    encoding: { x, y: { ...y, field: "allowed" }, y2: { field: "floor" } },
  }, {
    ...from,
    mark: { type: "line", color: "#3182bd", strokeDash: [4, 3], interpolate: "step" },
    encoding: { x, y: { ...y, field: "allowed" } },
  }];
}

/** A vertical rule at a step, with its label (none when empty), in both charts. */
interface _StepRule {
  step: number;
  color: string;
  dash: number[];
  label: string;
  /** Label at the top of the plot (else at the bottom). */
  top: boolean;
}

/**
 * The save rule and the first-divergence rule of a plot. Rules in every view; the save's label
 * once (top row) and in the zoomed column, at the bottom right of its rule, so it never meets the
 * divergence label at the top.
 */
function _stepRules(c: DivergencePanel["comparison"], o: _PlotOptions): _StepRule[] {
  const rules: _StepRule[] = [];
  const save = o.saveAt;
  if (save !== null) {
    rules.push({
      step: save,
      color: "#444",
      dash: [5, 4],
      label: o.saveLabel || o.inset ? `save @ ${exact(save)}` : "",
      top: false,
    });
  }
  if (c.first_divergent_step !== null) {
    rules.push({
      step: c.first_divergent_step,
      color: FAIL_COLOR,
      dash: [],
      label: o.inset ? `@ ${exact(c.first_divergent_step)}` : "first divergence",
      top: true,
    });
  }
  return rules;
}

/** The layer drawing one {@link _StepRule}; `height` places a label at the bottom. */
function _ruleLayer(r: _StepRule, x: ChartSpec, height: number): ChartSpec {
  return {
    data: { values: [{ step: r.step, label: r.label }] },
    layer: [
      {
        mark: { type: "rule", color: r.color, strokeDash: r.dash, strokeWidth: 1.25 },
        encoding: { x },
      },
      ...(r.label
        ? [{
          mark: {
            type: "text",
            align: "left",
            baseline: r.top ? "top" : "bottom",
            dx: 3,
            dy: r.top ? 3 : -3,
            y: r.top ? 0 : height,
            color: r.color,
            fontSize: 10,
          },
          encoding: { x, text: { field: "label" } },
        }]
        : []),
    ],
  };
}

/** The strip's step axis: labelled in every row (zoom columns differ), titled once. */
function stripAxis(range: [number, number], width: number, titled: boolean): ChartSpec {
  const x = stepAxis(range, true, width);
  return titled ? x : { ...x, title: null };
}
