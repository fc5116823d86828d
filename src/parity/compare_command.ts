/**
 * `deno task parity compare <a> <b> [options]`: the run's lanes on two metrics files, for ad-hoc
 * use. Prints a table (or `--json`) and exits by verdict: 0 PASS, 1 FAIL, 3 ERROR, 4 ABSTAIN,
 * 2 for usage errors.
 *
 * @module
 */

import { readMetrics } from "../metrics/read.ts";
import type { MetricSeries, MetricsFormat, ReadOptions } from "../metrics/series.ts";
import {
  type ComparisonSummary,
  type Diagnostic,
  EXIT_CODES,
  worstVerdict,
} from "../types/summary.ts";
import { judgeSeries } from "./evaluate.ts";
import { unionWindow } from "./lanes.ts";

/** Usage text of `parity compare`. */
export const COMPARE_USAGE = `usage: parity compare <a> <b> [options]

Compares one metric of two metrics files with the exact and/or tolerance lane.

  --format F          jsonl (default) | deepspeed-csv | log | tensorboard, for both files
  --format-b F        format of <b> when it differs
  --pattern RE        log format: regex with named groups step and loss
  --step-unit U       deepspeed-csv: samples (default: csv_monitor logs global_samples) | step
  --samples-per-step N  deepspeed-csv with samples: global batch size
  --lane L            exact | tolerance | both (default both)
  --metric M          metric to compare (default loss)
  --rtol X            tolerance lane relative tolerance (default 1e-4)
  --atol X            tolerance lane absolute tolerance (default 0)
  --max-failures N    tolerance lane failure budget (default 0)
  --from S, --to S    window bounds (default: the steps both files span, e.g. a resume's
                      steps N+1..S against a full baseline; a step missing inside fails)
  --json              print JSON instead of a table

Exit codes: 0 PASS, 1 FAIL, 3 ERROR, 4 ABSTAIN, 2 usage error.`;

const FORMATS: MetricsFormat[] = ["jsonl", "deepspeed-csv", "log", "tensorboard"];

interface CompareArgs {
  a: string;
  b: string;
  formatA: MetricsFormat;
  formatB: MetricsFormat;
  pattern?: string;
  stepUnit?: "step" | "samples";
  samplesPerStep?: number;
  lanes: ("exact" | "tolerance")[];
  metric: string;
  rtol: number;
  atol: number;
  maxFailures: number;
  from: number;
  to: number;
  json: boolean;
}

class UsageError extends Error {}

function parseArgs(args: string[]): CompareArgs {
  const positional: string[] = [];
  const flags = new Map<string, string | true>();
  const valued = new Set([
    "format",
    "format-b",
    "pattern",
    "step-unit",
    "samples-per-step",
    "lane",
    "metric",
    "rtol",
    "atol",
    "max-failures",
    "from",
    "to",
  ]);
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (!arg.startsWith("--")) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    const name = arg.slice(2, eq < 0 ? undefined : eq);
    if (name === "json" || name === "help") {
      flags.set(name, true);
    } else if (valued.has(name)) {
      const value = eq >= 0 ? arg.slice(eq + 1) : args[++i];
      if (value === undefined) throw new UsageError(`--${name} needs a value`);
      flags.set(name, value);
    } else {
      throw new UsageError(`unknown option --${name}`);
    }
  }
  if (flags.has("help")) throw new UsageError("help");
  if (positional.length !== 2) {
    throw new UsageError(`expected two metrics files, got ${positional.length}`);
  }
  const text = (name: string) => {
    const v = flags.get(name);
    return typeof v === "string" ? v : undefined;
  };
  const number = (name: string, fallback: number, check: (x: number) => boolean) => {
    const raw = text(name);
    if (raw === undefined) return fallback;
    const x = Number(raw);
    if (raw.trim() === "" || !check(x)) throw new UsageError(`--${name}: invalid value ${raw}`);
    return x;
  };
  const format = (name: string, fallback: MetricsFormat): MetricsFormat => {
    const raw = text(name);
    if (raw === undefined) return fallback;
    if (!FORMATS.includes(raw as MetricsFormat)) {
      throw new UsageError(`--${name}: expected one of ${FORMATS.join(", ")}, got ${raw}`);
    }
    return raw as MetricsFormat;
  };
  const lane = text("lane") ?? "both";
  if (!["exact", "tolerance", "both"].includes(lane)) {
    throw new UsageError(`--lane: expected exact, tolerance or both, got ${lane}`);
  }
  const stepUnit = text("step-unit");
  if (stepUnit !== undefined && stepUnit !== "step" && stepUnit !== "samples") {
    throw new UsageError(`--step-unit: expected step or samples, got ${stepUnit}`);
  }
  const formatA = format("format", "jsonl");
  const nonNegative = (x: number) => Number.isFinite(x) && x >= 0;
  const integer = (x: number) => Number.isInteger(x) && x >= 0;
  const parsed: CompareArgs = {
    a: positional[0],
    b: positional[1],
    formatA,
    formatB: format("format-b", formatA),
    pattern: text("pattern"),
    stepUnit: stepUnit as CompareArgs["stepUnit"],
    lanes: lane === "both" ? ["exact", "tolerance"] : [lane as "exact" | "tolerance"],
    metric: text("metric") ?? "loss",
    rtol: number("rtol", 1e-4, nonNegative),
    atol: number("atol", 0, nonNegative),
    maxFailures: number("max-failures", 0, integer),
    from: number("from", Number.NEGATIVE_INFINITY, integer),
    to: number("to", Number.POSITIVE_INFINITY, integer),
    json: flags.get("json") === true,
  };
  const sps = text("samples-per-step");
  if (sps !== undefined) parsed.samplesPerStep = number("samples-per-step", 0, (x) => x > 0);
  return parsed;
}

/** Result of {@link runCompare}: what the command prints, as data. */
export interface CompareResult {
  /** Worst verdict. */
  verdict: ComparisonSummary["verdict"];
  /** One entry per lane. */
  comparisons: ComparisonSummary[];
  /** Reader diagnostics of both files (phase `a` / `b`) and rounding findings. */
  diagnostics: Diagnostic[];
}

async function runCompare(args: CompareArgs): Promise<CompareResult> {
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
  for (const c of comparisons) {
    if (a.values[args.metric] === undefined || b.values[args.metric] === undefined) {
      // A metric one file lacks entirely is a usage or source problem, not a divergence.
      c.verdict = "ERROR";
      c.reason = `${a.values[args.metric] === undefined ? "a" : "b"} has no ${args.metric}. ${
        c.reason ?? ""
      }`.trim();
    }
  }
  return { verdict: worstVerdict(comparisons.map((c) => c.verdict)), comparisons, diagnostics };
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

/**
 * Runs `parity compare` with `args` (after the word `compare`); prints to stdout (usage errors
 * to stderr) and returns the exit code.
 */
export async function compareCommand(args: string[]): Promise<number> {
  let parsed: CompareArgs;
  try {
    parsed = parseArgs(args);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    if (error.message === "help") {
      console.log(COMPARE_USAGE);
      return 0;
    }
    console.error(`parity compare: ${error.message}`);
    console.error(COMPARE_USAGE);
    return 2;
  }
  const result = await runCompare(parsed);
  if (parsed.json) {
    console.log(JSON.stringify(result, null, 2));
  } else {
    console.log(formatCompareTable(result, parsed.a, parsed.b));
  }
  return EXIT_CODES[result.verdict];
}
