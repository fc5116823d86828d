/**
 * The harness command line: `run | validate | schema | compare | verify-plan | report |
 * history`. `deno task run-experiment <file>...` is `run`. Exit codes follow ARCHITECTURE.md:
 * 0 PASS, 1 FAIL, 2 invalid experiment or usage (nothing launched), 3 ERROR, 4 ABSTAIN.
 *
 * @module
 */

import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
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
import { DEFAULT_GOLDENS_DIR } from "./pipeline/golden.ts";
import { LockHeldError } from "./pipeline/lock.ts";
import { installSignalHandlers } from "./process/mod.ts";
import { historyCommand, reportCommand, writeSuiteIndex } from "./report/mod.ts";
import {
  bisect,
  BisectUsageError,
  formatBisect,
  formatRerun,
  rerunRun,
  saveGolden,
  StoredRunError,
} from "./reproduce/mod.ts";

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
  rerun <run-dir> [--goldens DIR] [--wait] [--quiet]
                         re-run every phase of a run (no cache) and compare bit for bit
                         (exit 0 REPRODUCED, 1 DRIFTED, 2 bad run folder, 3 ERROR)
  golden save <run-dir> [--goldens DIR]
                         store the run's baseline as the golden of its environment
  bisect <file> --repo DIR --good REV --bad REV [--set ...] [--results DIR] [--goldens DIR]
                         find the commit of a code input that broke parity
                         (exit 0 found, 2 bad usage, 3 inconclusive or interrupted)

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
        goldens: { type: "string", default: DEFAULT_GOLDENS_DIR },
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
          goldensDir: resolve(values.goldens),
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

// --- rerun | golden | bisect: thin dispatch into src/reproduce (ported to src/cli/ at merge) ---

function parseReproduceArgs<T extends ParseArgsOptionsConfig>(args: string[], options: T) {
  try {
    return parseArgs({ args, allowPositionals: true, strict: true, options });
  } catch (e) {
    throw new UsageError(e instanceof Error ? e.message : String(e));
  }
}

/** `rerun <run-dir>`: replays a run without the cache and compares it bit for bit. */
async function rerunCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseReproduceArgs(args, {
    goldens: { type: "string", default: DEFAULT_GOLDENS_DIR },
    wait: { type: "boolean", default: false },
    quiet: { type: "boolean", default: false },
  });
  if (positionals.length !== 1) throw new UsageError("rerun: name one run folder");
  const uninstall = installSignalHandlers({ listenWhileIdle: true });
  try {
    const result = await rerunRun(positionals[0], {
      progress: consoleProgress({ quiet: values.quiet }),
      harnessEnv: Deno.env.toObject(),
      goldensDir: resolve(values.goldens),
      wait: values.wait,
    });
    console.log(formatRerun(result));
    return result.exit_code;
  } finally {
    uninstall();
  }
}

/** `golden save <run-dir>`: files the run's baseline as its environment's golden. */
async function goldenCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseReproduceArgs(args, {
    goldens: { type: "string", default: DEFAULT_GOLDENS_DIR },
  });
  if (positionals[0] !== "save" || positionals.length !== 2) {
    throw new UsageError("golden: usage: golden save <run-dir> [--goldens DIR]");
  }
  const saved = await saveGolden(positionals[1], {
    goldensDir: resolve(values.goldens),
    harnessEnv: Deno.env.toObject(),
  });
  console.log(
    `${saved.replaced ? "replaced" : "saved"} golden ${saved.file}\n  environment ${saved.key}, ` +
      `${saved.steps} steps, metrics ${saved.metrics.join(", ")}`,
  );
  return 0;
}

/** `bisect <file> --repo DIR --good REV --bad REV`: the commit that broke parity. */
async function bisectCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseReproduceArgs(args, {
    repo: { type: "string" },
    good: { type: "string" },
    bad: { type: "string" },
    set: { type: "string", multiple: true, default: [] },
    results: { type: "string", default: "results" },
    goldens: { type: "string", default: DEFAULT_GOLDENS_DIR },
    quiet: { type: "boolean", default: false },
  });
  const { repo, good, bad } = values;
  if (positionals.length !== 1 || !repo || !good || !bad) {
    throw new UsageError("bisect: name one experiment file and --repo, --good and --bad");
  }
  const file = positionals[0];
  const loaded = await readExperimentFile(file, { sets: values.set });
  if (!loaded.ok) {
    console.error(formatValidationErrors(file, loaded.errors).join("\n"));
    return 2;
  }
  if (loaded.experiments.length !== 1) {
    throw new UsageError("bisect: the file expands to several experiments; pick one with --set");
  }
  const uninstall = installSignalHandlers({ listenWhileIdle: true });
  try {
    const result = await bisect({
      experiment: loaded.experiments[0],
      experimentFile: resolve(file),
      baseDir: dirname(resolve(file)),
      resultsDir: resolve(values.results),
      goldensDir: resolve(values.goldens),
      repo: resolve(repo),
      good,
      bad,
      progress: consoleProgress({ quiet: values.quiet }),
      harnessEnv: Deno.env.toObject(),
    });
    console.log(formatBisect(result));
    return result.exit_code;
  } finally {
    uninstall();
  }
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
      case "rerun":
        return await rerunCommand(rest);
      case "golden":
        return await goldenCommand(rest);
      case "bisect":
        return await bisectCommand(rest);
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
    if (e instanceof StoredRunError || e instanceof BisectUsageError) {
      console.error(`parity: ${e.message}`);
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
