/**
 * The chart set of one run: which charts exist and their specs, built from `summary.json` and
 * the per-step tables. Pure: the caller supplies the data, nothing is read here.
 *
 * @module
 */

import { culprits } from "../parity/mod.ts";
import type { ComparisonSummary, RunSummary } from "../types/mod.ts";
import type { BandPoint } from "./downsample.ts";
import { alignDifference, differenceSpec, isIdentical } from "./difference.ts";
import { divergenceSpec } from "./difference.ts";
import { divergencePanels } from "./divergence_panels.ts";
import { lossOverlaySpec, type OverlayDivergence } from "./loss_overlay.ts";
import { type LossTable, repeatPhases, type Series, seriesOf } from "./losses_table.ts";
import { planLoadSpec } from "./plan_load.ts";
import type { ChartSpec } from "./_spec.ts";

/** A chart to render: file stem, caption, spec. */
export interface NamedChart {
  /** File stem under `charts/` (`divergence`, `loss`, `diff-<comparison>`, `plan-load`). */
  name: string;
  /** One-line caption used by the reports. */
  caption: string;
  /** Comparison the chart belongs to, if any. */
  comparison?: string;
  /** The vega-lite spec. */
  spec: ChartSpec;
  /**
   * Whether the chart shows anything a reader needs: false for the difference chart of a PASS
   * comparison whose two series are bit-identical (a flat zero), true for every other chart.
   * The reports show only informative charts; every chart is still written.
   */
  informative: boolean;
}

/** Inputs of {@link buildRunCharts}. */
export interface RunChartsInput {
  /** The run summary. */
  summary: RunSummary;
  /** `losses.csv`. */
  losses: LossTable;
  /** Series of a metric other than `loss` (from `metrics.jsonl`); defaults to empty. */
  metricSeries?: (phase: string, metric: string) => Series;
  /**
   * Force a logarithmic loss axis (experiment `charts.log_scale`); without it the axis turns
   * logarithmic by itself when the plotted values span more than three decades.
   */
  logScale?: boolean;
  /** Display budget per series (experiment `charts.max_points`). */
  maxPoints?: number;
}

/** A file-name-safe stem for a comparison name (`baseline~resume-native` → `baseline_resume-native`). */
export function chartSlug(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^[_.]+|_+$/g, "") || "chart";
}

/**
 * Per-step min/max across the baseline and its repeats (`baseline-repeat-<k>` columns); null
 * when no repeat column exists. Steps where fewer than two of them have values are skipped.
 */
export function noiseBand(losses: LossTable, baseline = "baseline"): BandPoint[] | null {
  const repeats = repeatPhases(losses);
  if (repeats.length === 0) return null;
  const cols = [baseline, ...repeats].map((p) => losses.columns[p]).filter((c) => c !== undefined);
  const band: BandPoint[] = [];
  for (let i = 0; i < losses.steps.length; i++) {
    let lo = Number.POSITIVE_INFINITY;
    let hi = Number.NEGATIVE_INFINITY;
    let present = 0;
    for (const col of cols) {
      const v = col[i];
      if (v === null || !Number.isFinite(v)) continue;
      present++;
      lo = Math.min(lo, v);
      hi = Math.max(hi, v);
    }
    if (present >= 2) band.push({ step: losses.steps[i], lo, hi });
  }
  return band;
}

/**
 * The first divergences of the loss comparisons as the overlay draws them: one entry per distinct
 * step, naming the phases that broke there (the culprits, not side `b` of every failing
 * comparison: a failing resume~resume comparison blames the side that also fails against the
 * baseline).
 */
export function overlayDivergences(
  summary: Pick<RunSummary, "phases" | "comparisons">,
): OverlayDivergence[] {
  const comparisons = summary.comparisons.filter((c) => c.metric === "loss");
  const byStep = new Map<number, string[]>();
  for (const c of culprits({ phases: summary.phases, comparisons })) {
    if (c.step === null) continue;
    byStep.set(c.step, [...(byStep.get(c.step) ?? []), c.phase]);
  }
  return [...byStep].sort(([x], [y]) => x - y).map(([step, phases]) => ({ step, phases }));
}

/**
 * Lists every chart of a run with its spec, in reading order: the divergence chart (when a
 * comparison failed or a tolerance/drift lane was used), the loss overlay, the difference charts
 * of failing comparisons, the other difference charts (one per comparison with data on both
 * sides), and the plan-load chart when plans carry per-process loads.
 */
export function buildRunCharts(input: RunChartsInput): NamedChart[] {
  const { summary, losses } = input;
  const charts: NamedChart[] = [];
  const baseline = losses.phases[0] ?? "baseline";
  const seriesFor = (phase: string, metric: string): Series =>
    metric === "loss"
      ? seriesOf(losses, phase)
      : (input.metricSeries?.(phase, metric) ?? { steps: [], values: [] });
  const band = noiseBand(losses, baseline);
  const divergence = _divergenceChart(input, seriesFor, band);
  if (divergence) charts.push(divergence);
  const overlay = _overlayChart(input, band);
  if (overlay) charts.push(overlay);
  charts.push(..._differenceCharts(input, seriesFor, new Set(charts.map((c) => c.name))));
  const plan = planLoadSpec(summary.experiment, summary.plan_sync);
  if (plan) {
    charts.push({
      name: "plan-load",
      caption: "Send/receive bytes per process and policy",
      spec: plan,
      informative: true,
    });
  }
  return charts;
}

/** A phase's series of a metric (empty when it has none). */
type _SeriesFor = (phase: string, metric: string) => Series;

/** The divergence chart, or null when it would say nothing. */
function _divergenceChart(
  input: RunChartsInput,
  seriesFor: _SeriesFor,
  band: ReturnType<typeof noiseBand>,
): NamedChart | null {
  const summary = input.summary;
  const selection = divergencePanels(summary, seriesFor);
  const divergence = divergenceSpec({
    title: `${summary.experiment}: where each resume path leaves its reference`,
    saveAt: summary.save_at,
    panels: selection.panels,
    identical: selection.identical,
    noise: band,
    maxPoints: input.maxPoints,
  });
  if (!divergence) return null;
  return {
    name: "divergence",
    caption: "Per resume path: |b − a| per step against what its lane allows, culprits first",
    spec: divergence,
    informative: true,
  };
}

/** The loss overlay, or null when no phase has a value. */
function _overlayChart(
  input: RunChartsInput,
  band: ReturnType<typeof noiseBand>,
): NamedChart | null {
  const { summary, losses } = input;
  // Repeats show as the noise band; calibrations perturb a resume on purpose and stay out.
  const hidden = new Set([
    ...repeatPhases(losses),
    ...summary.phases.filter((p) => p.role === "calibrate").map((p) => p.name),
  ]);
  // Phases without a single value (a crashed resume) would only add an empty legend entry.
  const overlayPhases = losses.phases.filter((p) =>
    !hidden.has(p) && losses.columns[p].some((v) => v !== null)
  );
  if (overlayPhases.length === 0) return null;
  return {
    name: "loss",
    caption: "Loss of every phase, save step, first divergences and noise floor",
    spec: lossOverlaySpec({
      title: `${summary.experiment}: loss per phase`,
      series: overlayPhases.map((phase) => ({ phase, ...seriesOf(losses, phase) })),
      saveAt: summary.save_at,
      band,
      logScale: input.logScale,
      maxPoints: input.maxPoints,
      divergences: overlayDivergences(summary),
    }),
    informative: true,
  };
}

/** One difference chart per comparison with data on both sides; names unique against `used`. */
function _differenceCharts(
  input: RunChartsInput,
  seriesFor: _SeriesFor,
  used: Set<string>,
): NamedChart[] {
  const summary = input.summary;
  const charts: NamedChart[] = [];
  // Failing comparisons first (summary order within each group): they are what a reader opens.
  const ordered = [
    ...summary.comparisons.filter((c) => c.verdict === "FAIL"),
    ...summary.comparisons.filter((c) => c.verdict !== "FAIL"),
  ];
  for (const comparison of ordered) {
    const seriesA = seriesFor(comparison.a, comparison.metric);
    const seriesB = seriesFor(comparison.b, comparison.metric);
    if (seriesA.steps.length === 0 || seriesB.steps.length === 0) continue;
    let name = `diff-${chartSlug(comparison.name)}`;
    for (let k = 2; used.has(name); k++) name = `diff-${chartSlug(comparison.name)}-${k}`;
    used.add(name);
    charts.push({
      name,
      comparison: comparison.name,
      caption: `${comparison.name}: per-step ${comparison.metric} difference (${comparison.lane})`,
      spec: differenceSpec(differenceInput(comparison, seriesA, seriesB, input.maxPoints)),
      informative: !(comparison.verdict === "PASS" &&
        isIdentical(
          alignDifference(seriesA, seriesB, comparison.first_step, comparison.last_step),
        )),
    });
  }
  return charts;
}

function differenceInput(
  comparison: ComparisonSummary,
  seriesA: Series,
  seriesB: Series,
  maxPoints: number | undefined,
) {
  return {
    name: comparison.name,
    a: comparison.a,
    b: comparison.b,
    metric: comparison.metric,
    lane: comparison.lane,
    seriesA,
    seriesB,
    firstStep: comparison.first_step,
    lastStep: comparison.last_step,
    firstDivergentStep: comparison.first_divergent_step,
    rtol: comparison.rtol,
    atol: comparison.atol,
    drift: comparison.drift,
    maxPoints,
  };
}
