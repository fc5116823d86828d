/**
 * The chart set of one run: which charts exist and their specs, built from `summary.json` and
 * the per-step tables. Pure: the caller supplies the data, nothing is read here.
 *
 * @module
 */

import type { RunSummary } from "../types/summary.ts";
import type { BandPoint } from "./downsample.ts";
import { differenceSpec } from "./difference.ts";
import { lossOverlaySpec } from "./loss_overlay.ts";
import { type LossTable, repeatPhases, type Series, seriesOf } from "./losses_table.ts";
import { planLoadSpec } from "./plan_load.ts";
import type { ChartSpec } from "./_spec.ts";

/** A chart to render: file stem, caption, spec. */
export interface NamedChart {
  /** File stem under `charts/` (`loss`, `diff-<comparison>`, `plan-load`). */
  name: string;
  /** One-line caption used by the reports. */
  caption: string;
  /** Comparison the chart belongs to, if any. */
  comparison?: string;
  /** False for a chart that shows nothing a reviewer needs (a PASS pair's flat-zero difference). */
  informative: boolean;
  /** The vega-lite spec. */
  spec: ChartSpec;
}

/** Inputs of {@link buildRunCharts}. */
export interface RunChartsInput {
  /** The run summary. */
  summary: RunSummary;
  /** `losses.csv`. */
  losses: LossTable;
  /** Series of a metric other than `loss` (from `metrics.jsonl`); defaults to empty. */
  metricSeries?: (phase: string, metric: string) => Series;
  /** Logarithmic loss axis (experiment `charts.log_scale`). */
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
 * Lists every chart of a run with its spec: the loss overlay, one difference chart per
 * comparison that has data on both sides, and the plan-load chart when plans carry per-process
 * loads.
 */
export function buildRunCharts(input: RunChartsInput): NamedChart[] {
  const { summary, losses } = input;
  const charts: NamedChart[] = [];
  const repeats = new Set(repeatPhases(losses));
  const baseline = losses.phases[0] ?? "baseline";
  // Phases without a single value (a crashed resume) would only add an empty legend entry.
  const overlayPhases = losses.phases.filter((p) =>
    !repeats.has(p) && losses.columns[p].some((v) => v !== null)
  );
  const divergences = summary.comparisons
    .filter((c) => c.metric === "loss" && c.first_divergent_step !== null)
    .map((c) => ({ step: c.first_divergent_step as number, label: c.b }));
  if (overlayPhases.length > 0) {
    charts.push({
      name: "loss",
      caption: "Loss of every phase, save step and noise floor",
      informative: true,
      spec: lossOverlaySpec({
        title: `${summary.experiment}: loss per phase`,
        series: overlayPhases.map((phase) => ({ phase, ...seriesOf(losses, phase) })),
        saveAt: summary.save_at,
        band: noiseBand(losses, baseline),
        logScale: input.logScale,
        maxPoints: input.maxPoints,
        divergences,
      }),
    });
  }
  const used = new Set(charts.map((c) => c.name));
  for (const comparison of summary.comparisons) {
    const series = (phase: string) =>
      comparison.metric === "loss"
        ? seriesOf(losses, phase)
        : (input.metricSeries?.(phase, comparison.metric) ?? { steps: [], values: [] });
    const seriesA = series(comparison.a);
    const seriesB = series(comparison.b);
    if (seriesA.steps.length === 0 || seriesB.steps.length === 0) continue;
    let name = `diff-${chartSlug(comparison.name)}`;
    for (let k = 2; used.has(name); k++) name = `diff-${chartSlug(comparison.name)}-${k}`;
    used.add(name);
    charts.push({
      name,
      comparison: comparison.name,
      informative: comparison.verdict !== "PASS" || comparison.max_abs !== 0,
      caption: `${comparison.name}: per-step ${comparison.metric} difference (${comparison.lane})`,
      spec: differenceSpec({
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
        maxPoints: input.maxPoints,
      }),
    });
  }
  const plan = planLoadSpec(summary.experiment, summary.plan_sync);
  if (plan) {
    charts.push({
      name: "plan-load",
      caption: "Send/receive bytes per process and policy",
      informative: true,
      spec: plan,
    });
  }
  return charts;
}
