/**
 * The run's lanes on two metrics files, for ad-hoc use (`parity compare`, docs/parity.md): the
 * comparison as data ({@linkcode compareMetricsFiles}) and as a fixed-width table.
 *
 * @module
 */

import {
  type MetricSeries,
  type MetricsFormat,
  readMetrics,
  type ReadOptions,
} from "../metrics/mod.ts";
import type { ComparisonSummary, Diagnostic, ExitCode } from "../types/mod.ts";
import { judgeSeries } from "./evaluate.ts";
import { metricAbsent } from "./evidence_rules.ts";
import { judgeVerdicts } from "./judge.ts";
import { unionWindow } from "./lanes/mod.ts";

/** Which metrics files to compare, and how ({@linkcode compareMetricsFiles}). */
export interface CompareFilesOptions {
  /** First metrics file (or csv_monitor folder). */
  a: string;
  /** Second metrics file. */
  b: string;
  /** Format of `a`. */
  formatA: MetricsFormat;
  /** Format of `b`. */
  formatB: MetricsFormat;
  /** `log` format: regex with named groups `step` and `loss`. */
  pattern?: string;
  /** deepspeed-csv: whether the step column counts samples or steps. */
  stepUnit?: "step" | "samples";
  /** deepspeed-csv with samples: global batch size. */
  samplesPerStep?: number;
  /** Lanes to judge. */
  lanes: ("exact" | "tolerance")[];
  /** Metric to compare. */
  metric: string;
  /** Tolerance lane relative tolerance. */
  rtol: number;
  /** Tolerance lane absolute tolerance. */
  atol: number;
  /** Tolerance lane failure budget. */
  maxFailures: number;
  /** First step of the window; `-Infinity`: where both files start. */
  from: number;
  /** Last step of the window; `Infinity`: where both files end. */
  to: number;
}

/** Result of {@link compareMetricsFiles}: what the command prints, as data. */
export interface CompareResult {
  /** Worst verdict. */
  verdict: ComparisonSummary["verdict"];
  /** The exit code of that verdict (the judge's mapping). */
  exit_code: ExitCode;
  /** One entry per lane. */
  comparisons: ComparisonSummary[];
  /** Reader diagnostics of both files (phase `a` / `b`) and rounding findings. */
  diagnostics: Diagnostic[];
}

/**
 * Judges one metric of two metrics files with the run's lanes. By default the window is the span
 * both files cover, and every step inside it must be in both.
 */
export async function compareMetricsFiles(args: CompareFilesOptions): Promise<CompareResult> {
  const options = (format: MetricsFormat): ReadOptions => ({
    format,
    pattern: args.pattern,
    step_unit: args.stepUnit,
    samples_per_step: args.samplesPerStep,
  });
  const [a, b] = await Promise.all([
    readMetrics(args.a, options(args.formatA)),
    readMetrics(args.b, options(args.formatB)),
  ]);
  const diagnostics: Diagnostic[] = [
    ...a.diagnostics.map((d) => ({ ...d, phase: "a" })),
    ...b.diagnostics.map((d) => ({ ...d, phase: "b" })),
  ];
  // By default the window is the span both files cover — a resume logs N+1..S, so comparing it
  // with a full baseline judges the resumed steps — and every step inside it must be in both.
  const span = (s: MetricSeries, pick: (x: number, y: number) => number) => {
    const present = s.present[args.metric];
    let out = Number.NaN;
    s.steps.forEach((step, i) => {
      if (present?.[i]) out = Number.isNaN(out) ? step : pick(out, step);
    });
    return out;
  };
  const from = Number.isFinite(args.from)
    ? args.from
    : Math.max(span(a, Math.min), span(b, Math.min));
  const to = Number.isFinite(args.to) ? args.to : Math.min(span(a, Math.max), span(b, Math.max));
  const bounded = Number.isFinite(from) && Number.isFinite(to);
  const window = bounded
    ? unionWindow(a, b, args.metric, from, to)
    : unionWindow(a, b, args.metric, args.from, args.to);
  const comparisons = args.lanes.map((lane) =>
    judgeSeries(
      {
        name: "a~b",
        a: "a",
        b: "b",
        metric: args.metric,
        lane,
        window: { from: bounded ? from : 0, to: bounded ? to : 0 },
        rtol: args.rtol,
        atol: args.atol,
        max_failures: args.maxFailures,
        explicit: true,
        laneReason: "chosen with --lane",
      },
      a,
      b,
      window,
      {
        noise: { repeats: 0, identical: true },
        tolerance: { rtol: args.rtol, atol: args.atol, max_failures: args.maxFailures },
        diagnostics,
      },
    )
  );
  const absent = a.values[args.metric] === undefined
    ? "a"
    : b.values[args.metric] === undefined
    ? "b"
    : undefined;
  const judged = absent === undefined
    ? comparisons
    : comparisons.map((c) => metricAbsent(c, absent, args.metric));
  const { verdict, exit_code } = judgeVerdicts(judged.map((c) => c.verdict));
  return { verdict, exit_code, comparisons: judged, diagnostics };
}

/** Fixed-width table of lane results. */
export function formatCompareTable(result: CompareResult, a: string, b: string): string {
  const rows = [[
    "lane",
    "window",
    "compared",
    "first divergent step (a / b)",
    "max abs",
    "max ULP",
    "verdict",
  ]];
  for (const c of result.comparisons) {
    const d = c.divergence;
    rows.push([
      c.lane,
      c.first_step === null ? "-" : `${c.first_step}..${c.last_step}`,
      String(c.compared),
      d ? `${d.step} (${d.a ?? "n/a"} / ${d.b ?? "n/a"})` : "-",
      c.max_abs === null ? "-" : String(c.max_abs),
      c.max_ulp === null ? "-" : String(c.max_ulp),
      c.verdict,
    ]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  const lines = [`a: ${a}`, `b: ${b}`, ""];
  for (const row of rows) {
    lines.push(row.map((cell, i) => cell.padEnd(widths[i])).join("  ").trimEnd());
  }
  lines.push("");
  for (const c of result.comparisons) lines.push(`${c.lane}: ${c.reason ?? ""}`);
  const shown = result.diagnostics.filter((d) => d.level !== "info");
  if (shown.length > 0) {
    lines.push("");
    for (const d of shown) lines.push(`${d.level} ${d.code} (${d.phase}): ${d.message}`);
  }
  lines.push("", `verdict: ${result.verdict}`);
  return lines.join("\n");
}
