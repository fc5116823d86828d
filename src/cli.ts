/**
 * The harness command line: `run | validate | schema | compare | verify-plan | report |
 * history`. `deno task run-experiment <file>...` is `run`. Exit codes follow ARCHITECTURE.md:
 * 0 PASS, 1 FAIL, 2 invalid experiment or usage (nothing launched), 3 ERROR, 4 ABSTAIN.
 *
 * @module
 */

import { parseArgs } from "node:util";
import { dirname, resolve } from "node:path";
import { verifyPlanCommand } from "./affine/mod.ts";
import {
  experimentJsonSchema,
  formatValidationErrors,
  phaseNames,
  readExperimentFile,
  validateCommand,
} from "./experiment/mod.ts";
import type { Experiment } from "./experiment/schema.ts";
import { compareCommand } from "./parity/mod.ts";
import { consoleProgress } from "./pipeline/console_progress.ts";
import { runExperiment, type RunResult } from "./pipeline/runner.ts";
import { formatPlanPreview, previewPlan } from "./pipeline/plan_preview.ts";
import { EXIT_CODES, worstVerdict } from "./types/summary.ts";
import { gcCommand } from "./pipeline/gc.ts";
import { LockHeldError } from "./pipeline/lock.ts";
import { installSignalHandlers } from "./process/mod.ts";
import { historyCommand, reportCommand, writeSuiteIndex } from "./report/mod.ts";

const USAGE = `usage: parity <command> [options]

commands:
  run <file>... [--results DIR] [--set KEY.PATH=VALUE]... [--only PHASE]... [--force [PHASE]]...
      [--keep-going] [--wait] [--quiet]
                         run experiments (same as: deno task run-experiment)
  plan <file> [--set KEY.PATH=VALUE]... [--results DIR] [--json]
                         print the resolved phase plan (argv, env, cache) without running
  validate <file>... [--set KEY.PATH=VALUE]...
                         check experiment files without running anything
  schema                 print the experiment file JSON Schema
  compare <a> <b> [...]  compare two metrics files with the same lanes as a run
  verify-plan <plan.json> [--execute]
                         verify a transfer plan and print its statistics
  report <run-dir>       re-render every output of a finished run
  history [results-dir]  trend chart and table of past runs
  gc [results-dir] [--dry-run] [--experiment NAME]
                         delete checkpoints that no cached phase still needs

exit codes: 0 PASS, 1 FAIL, 2 bad input or usage, 3 ERROR, 4 ABSTAIN`;

/** Usage problem: printed with the usage text, exit code 2. */
class UsageError extends Error {}

/**
 * `--force` alone re-runs every phase; `--force PHASE` one phase and what depends on it. A bare
 * `--force` is rewritten to `--force=*` unless the next word is a phase name (not a file, not a
 * flag), so both spellings of the contract parse.
 */
function normalizeForce(args: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const next = args[i + 1];
    if (
      a === "--force" &&
      (next === undefined || next.startsWith("-") || /\.(ya?ml|json)$/i.test(next))
    ) {
      out.push("--force=*");
    } else {
      out.push(a);
    }
  }
  return out;
}

function parseRunArgs(args: string[]) {
  try {
    return parseArgs({
      args: normalizeForce(args),
      allowPositionals: true,
      strict: true,
      options: {
        results: { type: "string", default: "results" },
        set: { type: "string", multiple: true, default: [] },
        only: { type: "string", multiple: true, default: [] },
        force: { type: "string", multiple: true, default: [] },
        "keep-going": { type: "boolean", default: false },
        wait: { type: "boolean", default: false },
        quiet: { type: "boolean", default: false },
        help: { type: "boolean", short: "h", default: false },
      },
    });
  } catch (e) {
    throw new UsageError(e instanceof Error ? e.message : String(e));
  }
}

/** `run`: validates every file first (nothing launches on any error), then runs each experiment. */
export async function runCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseRunArgs(args);
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals.length === 0) throw new UsageError("run: name at least one experiment file");
  const force = values.force.length === 0
    ? false
    : values.force.includes("*")
    ? true
    : values.force;

  const loaded: { file: string; experiment: Experiment }[] = [];
  let invalid = false;
  for (const file of positionals) {
    const result = await readExperimentFile(file, { sets: values.set });
    if (!result.ok) {
      invalid = true;
      console.error(formatValidationErrors(file, result.errors).join("\n"));
      continue;
    }
    for (const experiment of result.experiments) loaded.push({ file, experiment });
  }
  if (invalid) return 2;
  for (const { file, experiment } of loaded) {
    const phases = phaseNames(experiment);
    const force = values.force.filter((name) => name !== "*");
    for (const [flag, names] of [["--only", values.only], ["--force", force]] as const) {
      const unknown = names.filter((name) => !phases.includes(name));
      if (unknown.length > 0) {
        throw new UsageError(
          `${flag} ${unknown.join(", ")}: no such phase in ${experiment.name} (${file}); ` +
            `its phases: ${phases.join(", ")}`,
        );
      }
    }
  }

  const suite = loaded.length > 1;
  const keepGoing = values["keep-going"] || suite;
  const progress = consoleProgress({ quiet: values.quiet });
  const uninstall = installSignalHandlers({ listenWhileIdle: true });
  const results: RunResult[] = [];
  try {
    for (const { file, experiment } of loaded) {
      results.push(
        await runExperiment(experiment, {
          resultsDir: resolve(values.results),
          baseDir: dirname(resolve(file)),
          experimentFile: resolve(file),
          only: values.only,
          keepGoing,
          force,
          wait: values.wait,
          progress,
          harnessEnv: Deno.env.toObject(),
        }),
      );
      if (results.at(-1)!.summary.interrupted) break;
    }
  } finally {
    uninstall();
  }
  if (suite) {
    const index = await writeSuiteIndex(
      resolve(values.results),
      results.map((r) => ({
        experiment: r.summary.experiment,
        runDir: r.runDir,
        summary: r.summary,
      })),
    );
    console.error(`suite index: ${index}`);
  }
  return EXIT_CODES[worstVerdict(results.map((r) => r.summary.verdict))];
}

/** `plan`: prints the resolved phase plan of each experiment in a file; launches nothing. */
async function planCommand(args: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      strict: true,
      options: {
        results: { type: "string", default: "results" },
        set: { type: "string", multiple: true, default: [] },
        json: { type: "boolean", default: false },
      },
    });
  } catch (e) {
    throw new UsageError(e instanceof Error ? e.message : String(e));
  }
  const { values, positionals } = parsed;
  if (positionals.length !== 1) throw new UsageError("plan: name one experiment file");
  const file = positionals[0];
  const result = await readExperimentFile(file, { sets: values.set });
  if (!result.ok) {
    console.error(formatValidationErrors(file, result.errors).join("\n"));
    return 2;
  }
  const previews = [];
  for (const experiment of result.experiments) {
    previews.push(
      await previewPlan(experiment, {
        resultsDir: resolve(values.results),
        baseDir: dirname(resolve(file)),
        harnessEnv: Deno.env.toObject(),
      }),
    );
  }
  console.log(
    values.json
      ? JSON.stringify(previews.length === 1 ? previews[0] : previews, null, 2)
      : previews.map(formatPlanPreview).join("\n\n"),
  );
  return 0;
}

/** Dispatches a harness command; returns the process exit code. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case "run":
        return await runCommand(rest);
      case "plan":
        return await planCommand(rest);
      case "validate":
        return await validateCommand(rest);
      case "schema":
        console.log(JSON.stringify(experimentJsonSchema(), null, 2));
        return 0;
      case "compare":
        return await compareCommand(rest);
      case "verify-plan":
        return await verifyPlanCommand(rest);
      case "report":
        return await reportCommand(rest);
      case "history":
        return await historyCommand(rest);
      case "gc":
        return await gcCommand(rest);
      case undefined:
      case "help":
      case "--help":
      case "-h":
        console.log(USAGE);
        return command === undefined ? 2 : 0;
      default:
        throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    }
  } catch (e) {
    if (e instanceof UsageError) {
      console.error(`parity: ${e.message}\n\n${USAGE}`);
      return 2;
    }
    if (e instanceof LockHeldError) {
      console.error(`parity: ${e.message}`);
      return 3;
    }
    throw e;
  }
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
