/**
 * The history trend: per experiment and comparison, `max_abs` over time, each run's point
 * coloured by its verdict.
 *
 * @module
 */

import {
  type ChartSpec,
  CONFIG,
  SCHEMA_URL,
  symlogConstant,
  VERDICT_DOMAIN,
  VERDICT_RANGE,
  WIDTH,
} from "./_spec.ts";

/** One point of the trend. */
export interface TrendPoint {
  /** ISO time of the run. */
  time: string;
  /** Experiment name. */
  experiment: string;
  /** Run id. */
  run_id: string;
  /** Comparison name. */
  comparison: string;
  /** Verdict of the comparison. */
  verdict: string;
  /** Max |b − a|, null when not measured. */
  max_abs: number | null;
  /** First divergent step, null when none. */
  first_divergent_step: number | null;
  /** Max ULP distance in the series' own precision, null when not measured. */
  max_ulp: number | null;
  /** Precision of `max_ulp`. */
  ulp_unit: "f32" | "f64" | null;
  /** The run's report, relative to the chart; null when unknown. */
  href: string | null;
}

/**
 * Builds the history-trend spec (one row panel per experiment; symlog y so exact zeros and
 * tiny differences are both visible).
 *
 * @example
 * ```ts
 * import { historyTrendSpec } from "./history_trend.ts";
 * const spec = historyTrendSpec([{ time: "2026-11-29T10:00:00Z", experiment: "quickstart",
 *   run_id: "r1", comparison: "baseline~resume-native", verdict: "PASS", max_abs: 0,
 *   first_divergent_step: null }]);
 * spec.facet !== undefined; // true
 * ```
 */
export function historyTrendSpec(points: TrendPoint[], title = "parity history"): ChartSpec {
  const values = points.map((p) => ({
    ...p,
    max_abs: p.max_abs !== null && Number.isFinite(p.max_abs) ? p.max_abs : null,
  }));
  const x = {
    field: "time",
    type: "temporal",
    title: "run time (UTC)",
    scale: { type: "utc" },
    axis: { format: "%m-%d %H:%M", labelAngle: 0, labelOverlap: true },
  };
  const y = {
    field: "max_abs",
    type: "quantitative",
    title: "max |b − a|",
    axis: { format: ".2~g" },
    scale: { type: "symlog", constant: symlogConstant(values.map((v) => v.max_abs ?? 0), 1e-12) },
  };
  return {
    $schema: SCHEMA_URL,
    title: { text: title, subtitle: ["max |b − a| per comparison; points coloured by verdict"] },
    config: CONFIG,
    data: { values },
    facet: { row: { field: "experiment", type: "nominal", title: "experiment" } },
    // Experiments differ by orders of magnitude; a shared axis would flatten the small ones.
    resolve: { scale: { y: "independent" } },
    spec: {
      width: WIDTH,
      height: 200,
      layer: [
        {
          mark: { type: "line", strokeWidth: 1.5 },
          encoding: {
            x,
            y,
            stroke: { field: "comparison", type: "nominal", title: "comparison" },
          },
        },
        {
          params: [{ name: "zoom", select: "interval", bind: "scales" }],
          mark: { type: "point", filled: true, size: 60, opacity: 1 },
          encoding: {
            x,
            y,
            fill: {
              field: "verdict",
              type: "nominal",
              title: "verdict",
              scale: { domain: VERDICT_DOMAIN, range: VERDICT_RANGE },
            },
            shape: { value: "circle" },
            tooltip: [
              { field: "time", type: "temporal", format: "%Y-%m-%d %H:%M" },
              { field: "run_id", type: "nominal" },
              { field: "comparison", type: "nominal" },
              { field: "verdict", type: "nominal" },
              { field: "max_abs", type: "quantitative", format: ".3~e" },
              { field: "first_divergent_step", type: "quantitative" },
            ],
          },
        },
      ],
    },
  };
}
