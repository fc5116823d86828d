/**
 * `parity compare <a> <b> [options]`: the run's lanes on two metrics files (docs/parity.md).
 * Prints a table (or `--json`) and exits by verdict: 0 PASS, 1 FAIL, 3 ERROR, 4 ABSTAIN; 2 for a
 * usage error.
 *
 * @module
 */

import { Command, Option } from "commander";
import type { MetricsFormat } from "../metrics/mod.ts";
import { DEFAULT_METRIC, DEFAULT_METRICS_FORMAT, TOLERANCE_DEFAULTS } from "../types/mod.ts";
import { compareMetricsFiles, formatCompareTable } from "../parity/mod.ts";
import { examples, numberArgument, type Subcommand, usageError } from "./_subcommand.ts";

/** Options of `parity compare`, as commander parses them. */
export interface CompareCommandOptions {
  /** Format of both files. */
  format: MetricsFormat;
  /** Format of `<b>` when it differs. */
  formatB?: MetricsFormat;
  /** `log` format regex. */
  pattern?: string;
  /** deepspeed-csv step column unit. */
  stepUnit?: "step" | "samples";
  /** deepspeed-csv global batch size. */
  samplesPerStep?: number;
  /** `exact`, `tolerance` or `both`. */
  lane: "exact" | "tolerance" | "both";
  /** Metric to compare. */
  metric: string;
  /** Relative tolerance. */
  rtol: number;
  /** Absolute tolerance. */
  atol: number;
  /** Tolerance lane failure budget. */
  maxFailures: number;
  /** Window start (default: the first step both files span). */
  from?: number;
  /** Window end (default: the last step both files span). */
  to?: number;
  /** Print JSON instead of a table. */
  json?: boolean;
}

const FORMATS: MetricsFormat[] = ["jsonl", "deepspeed-csv", "log", "tensorboard"];
const nonNegative = numberArgument((x) => Number.isFinite(x) && x >= 0, "a number >= 0");
const count = numberArgument((x) => Number.isInteger(x) && x >= 0, "an integer >= 0");
const positive = numberArgument((x) => x > 0, "a number > 0");

/** Builds `parity compare`. */
export const compareCommand: Subcommand = (exit): Command =>
  new Command("compare")
    .description("compare one metric of two metrics files with the exact and/or tolerance lane")
    .argument("<a>", "first metrics file")
    .argument("<b>", "second metrics file")
    .addOption(
      new Option("--format <F>", "format of both files").choices(FORMATS).default(
        DEFAULT_METRICS_FORMAT,
      ),
    )
    .addOption(new Option("--format-b <F>", "format of <b> when it differs").choices(FORMATS))
    .option("--pattern <RE>", "log format: regex with named groups step and loss")
    .addOption(
      new Option(
        "--step-unit <U>",
        "deepspeed-csv: samples (default: csv_monitor logs global_samples) | step",
      ).choices(["samples", "step"]),
    )
    .option("--samples-per-step <N>", "deepspeed-csv with samples: global batch size", positive)
    .addOption(
      new Option("--lane <L>", "lanes to judge").choices(["exact", "tolerance", "both"]).default(
        "both",
      ),
    )
    .option("--metric <M>", "metric to compare", DEFAULT_METRIC)
    .option("--rtol <X>", "tolerance lane relative tolerance", nonNegative, TOLERANCE_DEFAULTS.rtol)
    .option("--atol <X>", "tolerance lane absolute tolerance", nonNegative, TOLERANCE_DEFAULTS.atol)
    .option(
      "--max-failures <N>",
      "tolerance lane failure budget",
      count,
      TOLERANCE_DEFAULTS.max_failures,
    )
    .option(
      "--from <S>",
      "window start (default: the first step both files span; a step missing inside fails)",
      count,
    )
    .option("--to <S>", "window end (default: the last step both files span)", count)
    .option("--json", "print JSON instead of a table")
    .addHelpText(
      "after",
      examples(
        ["parity compare a/metrics.jsonl b/metrics.jsonl --lane both"],
        "Exit codes: 0 PASS, 1 FAIL, 3 ERROR, 4 ABSTAIN, 2 usage error.",
      ),
    )
    .action(async (a: string, b: string, options: CompareCommandOptions, command: Command) => {
      const problem = await compareUsageProblem(a, b, options);
      if (problem !== null) usageError(command, problem);
      const result = await compareMetricsFiles({
        a,
        b,
        formatA: options.format,
        formatB: options.formatB ?? options.format,
        pattern: options.pattern,
        stepUnit: options.stepUnit,
        samplesPerStep: options.samplesPerStep,
        lanes: options.lane === "both" ? ["exact", "tolerance"] : [options.lane],
        metric: options.metric,
        rtol: options.rtol,
        atol: options.atol,
        maxFailures: options.maxFailures,
        from: options.from ?? Number.NEGATIVE_INFINITY,
        to: options.to ?? Number.POSITIVE_INFINITY,
      });
      console.log(
        options.json ? JSON.stringify(result, null, 2) : formatCompareTable(result, a, b),
      );
      exit(result.exit_code);
    });

/**
 * A usage mistake of `parity compare` (exit 2, nothing judged): an inverted window, an option
 * that does not apply to the chosen formats, or an input that is not a readable file or folder.
 */
async function compareUsageProblem(
  a: string,
  b: string,
  options: CompareCommandOptions,
): Promise<string | null> {
  if (options.from !== undefined && options.to !== undefined && options.from > options.to) {
    return `--from ${options.from} is after --to ${options.to}`;
  }
  const formats = [options.format, options.formatB ?? options.format];
  if (options.pattern !== undefined && !formats.includes("log")) {
    return "--pattern applies only to --format log";
  }
  const csv = formats.includes("deepspeed-csv");
  if (!csv && (options.samplesPerStep !== undefined || options.stepUnit !== undefined)) {
    return "--step-unit and --samples-per-step apply only to --format deepspeed-csv";
  }
  for (const path of [a, b]) {
    try {
      await Deno.stat(path);
    } catch {
      return `${path}: no such file or folder`;
    }
  }
  return null;
}
