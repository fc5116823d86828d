/**
 * The divergence chart, first of a run's charts: where each resume path leaves its reference.
 * One row of small multiples per resume path (culprits first, from `divergencePanels()`), each
 * with |b − a| per step on a shared log axis, the |b − a| its lane allows (tolerance:
 * atol + rtol·|a|; drift: the early float32-ULP limit, then the envelope), the noise floor of the
 * repeated baselines, the save step and the first divergent step. Steps where b = a exactly sit
 * in a strip beneath the log axis (log(0) has no place on it). Long windows get a second column
 * zoomed on the resume: from a few steps before the save to a few after the first divergence.
 *
 * Why |b − a| and not ULPs on the axis: every threshold a lane applies (tolerance, drift
 * envelope, noise floor) is an absolute difference, so each one is a line the points cross; the
 * ULP distance (in the series' own precision) is in every tooltip and in each row's header.
 *
 * @module
 */

import { comparisonUlpText, exact, stat, ulps } from "../format/numbers.ts";
import { decadeDomain, logAxis } from "./_axis_labels.ts";
import { allowedDifference } from "./_envelope.ts";
import { ulpUnitOfRows } from "./difference.ts";
import { IDENTICAL_LABEL, stripKinds, type StripRun, stripRuns, stripView } from "./_strip.ts";
import type { DivergencePanel } from "./divergence_panels.ts";
import { type BandPoint, DEFAULT_MAX_POINTS, downsampleIndices } from "./downsample.ts";
import {
  type ChartSpec,
  CONFIG,
  differenceTooltip,
  FAIL_COLOR,
  indexOfStep,
  SCHEMA_URL,
  stepAxis,
  WIDTH,
  xZoom,
  ZOOM_HELP,
} from "./_spec.ts";

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
 * import { divergenceSpec } from "./divergence.ts";
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

/** One drawn step of a panel. */
interface PanelValue {
  step: number;
  abs: number | null;
  allowed: number | null;
  outside: boolean;
  a_text: string;
  b_text: string;
  diff_text: string;
  ulp_text: string;
  allowed_text: string;
}

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
  const abs = rows.map((r) => Math.abs(r.diff));
  const idx = downsampleIndices(abs, maxPoints, keep);
  const values: PanelValue[] = [];
  for (const i of idx) {
    const r = rows[i];
    const limit = allowed ? allowed[i] : 0;
    values.push({
      step: r.step,
      // Log axes cannot hold 0: exact zeros are in the strip (every step, not downsampled).
      abs: abs[i] > 0 && Number.isFinite(abs[i]) ? abs[i] : null,
      allowed: allowed && Number.isFinite(limit) && limit > 0 ? limit : null,
      outside: r.a !== r.b && !(abs[i] <= limit),
      a_text: exact(r.a),
      b_text: exact(r.b),
      diff_text: stat(r.diff),
      ulp_text: ulps(r.ulp, unit),
      allowed_text: allowed ? stat(limit) : "0 (exact lane)",
    });
  }
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
    layers.push(..._envelopeLayers(data, inRange, x, o.y));
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

/** The allowed |b − a|: a blue band and its dashed edge. */
function _envelopeLayers(
  data: ChartSpec,
  inRange: ChartSpec[],
  x: ChartSpec,
  y: ChartSpec,
): ChartSpec[] {
  return [{
    data,
    transform: inRange,
    mark: { type: "area", color: ENVELOPE, opacity: 0.4, interpolate: "step" },
    encoding: { x, y: { ...y, field: "allowed" }, y2: { field: "floor" } },
  }, {
    data,
    transform: inRange,
    mark: { type: "line", color: "#3182bd", strokeDash: [4, 3], interpolate: "step" },
    encoding: { x, y: { ...y, field: "allowed" } },
  }];
}

/** A vertical rule at a step, with its label (none when empty). */
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

/** The layer drawing one {@link _StepRule}. */
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
