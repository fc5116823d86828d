/**
 * The history trend: per experiment and comparison, the largest ULP distance of each run (in the
 * series' own precision) on a log axis, one row per experiment. Runs are evenly spaced in time
 * order and labelled by the shortest time format that tells them apart. Exact zeros (bit-identical)
 * and unmeasured runs sit in a strip beneath the log axis, never at log(0). A comparison's runs
 * are joined by a line only while its verdict stays the same: a PASS followed by a FAIL is two
 * points, not a gradual rise. Series colours avoid the verdict colours; the verdict is the point's
 * shape and outline. Clicking a point opens that run's report (`href`).
 *
 * @module
 */

import { count, exact, stat, ulps } from "../format/mod.ts";
import { decadeDomain, decadeTicks, lookupLabelExpr } from "./_axis_labels.ts";
import {
  bottomLegend,
  type ChartSpec,
  CONFIG,
  SCHEMA_URL,
  SERIES_RANGE,
  VERDICT_DOMAIN,
  VERDICT_RANGE,
  WIDTH,
} from "./_spec.ts";

/** One point of the trend: one comparison of one run. */
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
  /**
   * Max ULP distance in the series' own precision (`ulp_unit`), null when not measured. While no
   * point of a chart carries it, the chart falls back to `max_abs` (older history rows).
   */
  max_ulp?: number | null;
  /** Precision `max_ulp` counts in: `f32` when both series are float32 values, else `f64`. */
  ulp_unit?: "f32" | "f64" | null;
  /** Link to that run's report, relative to the chart (opened on click in report.html). */
  href?: string | null;
}

/** Strip category of a run whose difference is exactly zero. */
export const ZERO_LABEL = "0 (identical)";
/** Strip category of a run with no measurement (or a non-finite one). */
export const UNMEASURED_LABEL = "not measured";

/** Point shapes of the verdicts, in {@link VERDICT_DOMAIN} order. */
const VERDICT_SHAPES = ["circle", "triangle-up", "diamond", "square"];

/** A point as drawn: the input plus its run label, strip category and line segment. */
export interface TrendMark extends TrendPoint {
  /** Run label on the x axis (unique within the experiment). */
  run: string;
  /** The measure drawn: `max_ulp`, or `max_abs` when the chart has no ULPs. */
  value: number | null;
  /** Null when the point is on the log axis, else its strip category. */
  strip: string | null;
  /** Consecutive log-axis points of a comparison with the same verdict share a segment. */
  segment: string;
}

/**
 * Lays the points out: run labels per experiment, strip categories, and line segments that
 * break at every verdict change (and at every point that leaves the log axis).
 */
export function trendMarks(points: readonly TrendPoint[]): TrendMark[] {
  const useUlp = points.some((p) => p.max_ulp !== undefined && p.max_ulp !== null);
  const labels = runLabels(points);
  const sorted = [...points].sort((x, y) =>
    x.time.localeCompare(y.time) || x.run_id.localeCompare(y.run_id)
  );
  const state = new Map<string, { verdict: string; onAxis: boolean; segment: number }>();
  return sorted.map((p) => {
    const raw = useUlp ? p.max_ulp ?? null : p.max_abs;
    const value = raw !== null && Number.isFinite(raw) ? raw : null;
    const strip = value === null ? UNMEASURED_LABEL : value === 0 ? ZERO_LABEL : null;
    const key = `${p.experiment}\u0000${p.comparison}`;
    const prev = state.get(key);
    const onAxis = strip === null;
    const segment = prev && prev.verdict === p.verdict && prev.onAxis && onAxis
      ? prev.segment
      : (prev?.segment ?? -1) + 1;
    state.set(key, { verdict: p.verdict, onAxis, segment });
    return {
      ...p,
      run: labels.get(`${p.experiment}\u0000${p.run_id}`)!,
      value,
      strip,
      segment: `${p.comparison}#${segment}`,
    };
  });
}

/**
 * Builds the history-trend spec: one row per experiment (its log axis and its strip), a legend
 * of comparisons (colour) and verdicts (shape and outline).
 *
 * @example
 * ```ts
 * import { historyTrendSpec } from "./history_trend.ts";
 * const spec = historyTrendSpec([{ time: "2026-11-29T10:00:00Z", experiment: "quickstart",
 *   run_id: "r1", comparison: "baseline~resume-native", verdict: "PASS", max_abs: 0,
 *   first_divergent_step: null, max_ulp: 0, ulp_unit: "f32", href: null }]);
 * Array.isArray(spec.vconcat); // true
 * ```
 */
export function historyTrendSpec(points: TrendPoint[], title = "parity history"): ChartSpec {
  const marks = trendMarks(points);
  const useUlp = points.some((p) => p.max_ulp !== undefined && p.max_ulp !== null);
  const comparisons = [...new Set(marks.map((m) => m.comparison))].sort();
  const experiments = [...new Set(marks.map((m) => m.experiment))];
  const values = _trendValues(marks);
  const seriesScale = { domain: comparisons, range: SERIES_RANGE };
  const measure = useUlp ? "max ULP distance" : "max |b − a|";
  const trend: _Trend = {
    values,
    comparisons,
    seriesScale,
    verdictMarks: _verdictMarks(comparisons, seriesScale),
    point: { type: "point", filled: true, size: 90, strokeWidth: 1.75, opacity: 1 },
    useUlp,
    measure,
  };
  return {
    $schema: SCHEMA_URL,
    description: "Hover a point for its run; click it to open that run's report.",
    title: {
      text: title,
      subtitle: [
        `${measure} per comparison and run, log axis` +
        (useUlp ? " (ULPs in each series' own precision)" : ""),
        `"${ZERO_LABEL}" and unmeasured runs in the strip beneath each axis`,
        "lines join runs only while the verdict stays the same; outline and shape: verdict",
      ],
    },
    config: CONFIG,
    data: { values },
    vconcat: experiments.map((experiment) => _experimentRow(trend, experiment)),
    spacing: 18,
    resolve: { scale: { fill: "shared", stroke: "shared", shape: "shared", color: "shared" } },
  };
}

/** One drawn point of the trend: a mark and its printed forms. */
type _TrendValue = ReturnType<typeof _trendValues>[number];

/** What every experiment's row of the trend shares. */
interface _Trend {
  values: _TrendValue[];
  comparisons: string[];
  seriesScale: ChartSpec;
  /** Fill by comparison, outline and shape by verdict, the link and the tooltip. */
  verdictMarks: ChartSpec;
  /** The point mark of every view. */
  point: ChartSpec;
  useUlp: boolean;
  /** What the value axis measures. */
  measure: string;
}

/** The table the views read: each mark with its series copy, link and printed forms. */
function _trendValues(marks: TrendMark[]) {
  return marks.map((m) => ({
    ...m,
    line_series: m.comparison,
    href: m.href ?? null,
    time_text: m.time,
    ulp_text: m.max_ulp === undefined || m.max_ulp === null
      ? "—"
      : ulps(m.max_ulp, m.ulp_unit ?? "f64"),
    abs_text: stat(m.max_abs),
    step_text: exact(m.first_divergent_step),
  }));
}

/** The encodings of a point: fill by comparison, outline and shape by verdict, link, tooltip. */
function _verdictMarks(comparisons: string[], seriesScale: ChartSpec): ChartSpec {
  const tooltip = [
    { field: "time_text", type: "nominal", title: "time" },
    { field: "run_id", type: "nominal", title: "run" },
    { field: "comparison", type: "nominal", title: "comparison" },
    { field: "verdict", type: "nominal", title: "verdict" },
    { field: "ulp_text", type: "nominal", title: "max ULP distance" },
    { field: "abs_text", type: "nominal", title: "max |b − a|" },
    { field: "step_text", type: "nominal", title: "first divergent step" },
  ];
  return {
    fill: {
      field: "comparison",
      type: "nominal",
      title: "comparison",
      scale: seriesScale,
      legend: bottomLegend(comparisons),
    },
    stroke: {
      field: "verdict",
      type: "nominal",
      title: "verdict (shape and outline)",
      scale: { domain: VERDICT_DOMAIN, range: VERDICT_RANGE },
    },
    shape: {
      field: "verdict",
      type: "nominal",
      title: "verdict (shape and outline)",
      scale: { domain: VERDICT_DOMAIN, range: VERDICT_SHAPES },
    },
    href: { field: "href" },
    tooltip,
  };
}

/** One experiment's row: its log axis (when any run is on it) above its strip. */
function _experimentRow(t: _Trend, experiment: string): ChartSpec {
  const own = t.values.filter((v) => v.experiment === experiment);
  const runs = [...new Set(own.map((v) => v.run))];
  const x = {
    field: "run",
    type: "ordinal",
    title: null,
    sort: runs,
    scale: { domain: runs },
    axis: { labelAngle: runs.length > 8 ? -35 : 0, labelOverlap: true, labelLimit: 120 },
  };
  // Every view reads the one top-level table, filtered to its experiment and to the log axis
  // or the strip.
  const mine = { filter: { field: "experiment", equal: experiment } };
  const strips = [ZERO_LABEL, UNMEASURED_LABEL].filter((s) => own.some((v) => v.strip === s));
  const onAxis = own.filter((v) => v.strip === null);
  const views: ChartSpec[] = onAxis.length === 0 ? [] : [_axisView(t, onAxis, mine, x, strips)];
  if (strips.length > 0) {
    views.push({
      width: WIDTH,
      height: Math.max(16, 5 * t.comparisons.length) * strips.length,
      transform: [mine, { filter: "datum.strip !== null" }],
      mark: t.point,
      encoding: {
        x,
        y: { field: "strip", type: "nominal", title: null, scale: { domain: strips } },
        // Comparisons side by side within the strip, so identical runs do not hide each other.
        yOffset: { field: "comparison", type: "nominal", scale: { domain: t.comparisons } },
        ...t.verdictMarks,
      },
    });
  }
  return {
    title: { text: experiment, fontSize: 12, anchor: "start" },
    vconcat: views,
    spacing: 4,
    resolve: { scale: { x: "shared" } },
  };
}

/** The log-axis view of an experiment's measured runs: lines per segment, points per run. */
function _axisView(
  t: _Trend,
  onAxis: _TrendValue[],
  mine: ChartSpec,
  x: ChartSpec,
  strips: string[],
): ChartSpec {
  const axisRows = [mine, { filter: "datum.strip === null" }];
  const domain = decadeDomain(onAxis.map((v) => v.value)) ?? [0.1, 10];
  const ticks = decadeTicks(domain, 5);
  const y = {
    field: "value",
    type: "quantitative",
    title: `${t.measure} (log)`,
    scale: { type: "log", domain, nice: false },
    axis: { values: ticks, labelExpr: lookupLabelExpr(ticks, t.useUlp ? count : stat) },
  };
  return {
    width: WIDTH,
    height: 150,
    layer: [
      {
        transform: axisRows,
        mark: { type: "line", strokeWidth: 1.5 },
        encoding: {
          x: { ...x, axis: strips.length > 0 ? null : x.axis },
          y,
          // A copy of the comparison field: the same field on two channels would merge
          // their legends, and this one has none.
          color: { field: "line_series", type: "nominal", scale: t.seriesScale, legend: null },
          detail: { field: "segment", type: "nominal" },
        },
      },
      {
        transform: axisRows,
        mark: t.point,
        encoding: { x: { ...x, axis: strips.length > 0 ? null : x.axis }, y, ...t.verdictMarks },
      },
    ],
  };
}

/**
 * Run labels per experiment: the shortest of `MM-DD`, `MM-DD HH:MM`, `MM-DD HH:MM:SS` (with the
 * year when runs span years) that tells the experiment's runs apart, else the run id.
 */
function runLabels(points: readonly TrendPoint[]): Map<string, string> {
  const out = new Map<string, string>();
  const byExperiment = new Map<string, Map<string, string>>();
  for (const p of points) {
    const runs = byExperiment.get(p.experiment) ?? new Map<string, string>();
    runs.set(p.run_id, p.time);
    byExperiment.set(p.experiment, runs);
  }
  for (const [experiment, runs] of byExperiment) {
    const iso = [...runs].map(([id, time]) => {
      const date = new Date(time);
      return { id, iso: Number.isNaN(date.getTime()) ? null : date.toISOString() };
    });
    const years = new Set(iso.map((r) => r.iso?.slice(0, 4)));
    const from = years.size > 1 ? 0 : 5;
    const formats = [10, 16, 19].map((to) => (s: string) => s.slice(from, to).replace("T", " "));
    let chosen: ((s: string) => string) | null = null;
    if (iso.every((r) => r.iso !== null)) {
      chosen = formats.find((f) => new Set(iso.map((r) => f(r.iso!))).size === iso.length) ??
        null;
    }
    for (const r of iso) {
      out.set(`${experiment}\u0000${r.id}`, chosen ? chosen(r.iso!) : r.id);
    }
  }
  return out;
}
