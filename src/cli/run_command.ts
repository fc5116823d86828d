/**
 * `parity run <file>...` (also `deno task run-experiment <file>...`): validates every file first
 * — nothing launches when any is invalid — then runs each experiment and, for more than one, writes
 * a suite index. Exit code: the worst verdict (README "Exit codes").
 *
 * @module
 */

import { dirname, resolve } from "node:path";
import { checkResultsFolder, FULL_VERIFY_LIMIT_GIB } from "../pipeline/store/mod.ts";
import { Command, type ParseOptionsResult } from "commander";
import {
  formatValidationErrors,
  phaseNames,
  presetsUsed,
  readExperimentFile,
} from "../experiment/mod.ts";
import { type Experiment, resolvePlan } from "../experiment/mod.ts";
import { consoleProgress } from "./console_progress.ts";
import { DEFAULT_GOLDENS_DIR, EXIT_CODES } from "../types/mod.ts";
import { runExperiment, type RunResult, shownPath } from "../pipeline/running/mod.ts";
import { judgeVerdicts } from "../parity/mod.ts";
import { installSignalHandlers } from "../process/mod.ts";
import { imageBaseUrlProblem, writeSuiteIndex } from "../report/mod.ts";
import { collect, examples, printError, type Subcommand, usageError } from "./_subcommand.ts";

/** Options of `parity run`, as commander parses them. */
export interface RunCommandOptions {
  /** Results folder. */
  results: string;
  /** `--set KEY.PATH=VALUE` overrides, in order. */
  set?: string[];
  /** `--only PHASE` names. */
  only?: string[];
  /** `--force` values; `*` stands for a bare `--force` (every phase). */
  force?: string[];
  /** Keep running phases after one fails. */
  keepGoing?: boolean;
  /** Wait for another run's lock instead of failing. */
  wait?: boolean;
  /** Phase start/end lines only. */
  quiet?: boolean;
  /** Folder of per-environment goldens (`golden: true`). */
  goldens: string;
  /** The results folder's published URL (absolute image links in report.md). */
  imageBaseUrl?: string;
  /** Re-hash every reused checkpoint, whatever its size. */
  verifyCheckpoints?: boolean;
  /** `false` with `--no-launch` (commander's negated option): judge from the cache only. */
  launch?: boolean;
  /** An offline bundle to import and judge (implies `noLaunch`). */
  import?: string;
}

/** Marker a bare `--force` is rewritten to: re-run every phase. */
const FORCE_ALL = "*";

/** Builds `parity run`. */
export const runCommand: Subcommand = (exit): Command => {
  const command = new ForceAwareCommand("run")
    .description("run experiments (same as: deno task run-experiment <file>...)")
    .argument("<file...>", "experiment files (YAML or JSON)")
    .option("--results <dir>", "results folder", "results")
    .option("--set <KEY.PATH=VALUE>", "override a field of every experiment (repeatable)", collect)
    .option("--only <phase>", "run this phase and what it consumes (repeatable)", collect)
    .option(
      "--force [phase]",
      "re-run PHASE and what depends on it; alone: every phase (repeatable)",
      collect,
    )
    .option("--keep-going", "keep running phases after one fails")
    .option("--wait", "wait for another run of the same experiment to finish")
    .option("--quiet", "no phase progress: only notes, errors, the card and the verdict line")
    .option("--goldens <dir>", "goldens folder for golden: true", DEFAULT_GOLDENS_DIR)
    .option(
      "--image-base-url <url>",
      "URL where CI publishes the results folder: report.md links become absolute",
    )
    .option(
      "--verify-checkpoints",
      `re-hash every reused checkpoint in full (default: only those up to ${FULL_VERIFY_LIMIT_GIB} GiB)`,
    )
    .option("--no-launch", "launch nothing: reuse every phase from the cache, judge, report")
    .option(
      "--import <bundle>",
      "judge an offline bundle tools/offline_phases.py ran (as an earlier run; implies --no-launch)",
    )
    .addHelpText(
      "after",
      examples(
        [
          "parity run experiments/quickstart.yaml",
          "parity run experiments/deepspeed/gpu_autoep_seed.yaml --import results/offline-bundle",
          "parity run experiments/quickstart.yaml --set trainer.args.fault=skip-rng-restore",
          "parity run experiments/nightly/*.yaml --image-base-url https://ci.example.org/results/",
        ],
        "stdout: the card and one verdict line per experiment (and the suite index); stderr: progress.",
      ),
    )
    .action(async (files: string[], options: RunCommandOptions) => {
      exit(await runFiles(command, files, options));
    });
  return command;
};

/**
 * `--force` alone re-runs every phase; `--force PHASE` one phase and what depends on it. A bare
 * `--force` is rewritten to `--force=*` unless the next word is a phase name (not a file, not a
 * flag), so both spellings parse and `--force quickstart.yaml` keeps the file an argument.
 */
class ForceAwareCommand extends Command {
  override parseOptions(args: string[]): ParseOptionsResult {
    return super.parseOptions(normalizeForce(args));
  }
}

function normalizeForce(args: string[]): string[] {
  return args.map((arg, i) => {
    const next = args[i + 1];
    const bare = next === undefined || next.startsWith("-") || /\.(ya?ml|json)$/i.test(next);
    return arg === "--force" && bare ? `--force=${FORCE_ALL}` : arg;
  });
}

/** {@linkcode RunCommandOptions} with every absent option at its default. */
type ResolvedRunOptions = Required<RunCommandOptions>;

async function runFiles(
  command: Command,
  files: string[],
  given: RunCommandOptions,
): Promise<number> {
  const options: ResolvedRunOptions = {
    results: given.results,
    set: given.set ?? [],
    only: given.only ?? [],
    force: given.force ?? [],
    keepGoing: given.keepGoing ?? false,
    wait: given.wait ?? false,
    quiet: given.quiet ?? false,
    goldens: given.goldens,
    imageBaseUrl: given.imageBaseUrl ?? "",
    verifyCheckpoints: given.verifyCheckpoints ?? false,
    launch: given.launch ?? true,
    import: given.import ?? "",
  };
  if (options.imageBaseUrl !== "") {
    const problem = imageBaseUrlProblem(options.imageBaseUrl);
    if (problem) return usageError(command, problem);
  }
  const loaded: { file: string; experiment: Experiment }[] = [];
  let invalid = false;
  for (const file of files) {
    const result = await readExperimentFile(file, { sets: options.set });
    if (!result.ok) {
      invalid = true;
      console.error(formatValidationErrors(file, result.errors).join("\n"));
      continue;
    }
    for (const experiment of result.experiments) loaded.push({ file, experiment });
  }
  if (invalid) return EXIT_CODES.USAGE;
  if (options.import !== "" && loaded.length !== 1) {
    return usageError(
      command,
      `--import: give one experiment (the bundle's), not ${loaded.length}`,
    );
  }
  if ((options.import !== "" || !options.launch) && (options.only.length || options.force.length)) {
    return usageError(command, "--import and --no-launch launch nothing: drop --only and --force");
  }
  const force = options.force.filter((name) => name !== FORCE_ALL);
  for (const { file, experiment } of loaded) {
    const phases = phaseNames(experiment);
    for (const [flag, names] of [["--only", options.only], ["--force", force]] as const) {
      const unknown = names.filter((name) => !phases.includes(name));
      if (unknown.length > 0) {
        usageError(
          command,
          `${flag} ${unknown.join(", ")}: no such phase in ${experiment.name} (${file}); ` +
            `its phases: ${phases.join(", ")}`,
        );
      }
    }
  }
  // An environment the experiment needs but the machine lacks is ERROR, said in one sentence.
  // The arguments of every program a phase runs (a resume's own args are merged over the
  // trainer's), so a preset can name an environment one of them selects (deepspeed's `venv`).
  const argSets = loaded.flatMap(({ experiment: e }) => [
    { ...e.trainer.args },
    { ...e.trainer.args, ...e.converter?.args },
    ...Object.values(e.resume).map((r) => ({ ...e.trainer.args, ...r.args })),
  ]);
  const problems = [...new Set(loaded.flatMap(({ experiment }) => presetsUsed(experiment)))]
    .flatMap((preset) => preset.environmentProblem?.(argSets) ?? []);
  const folderProblem = await checkResultsFolder(
    options.results,
    loaded.flatMap(({ experiment }) => [experiment.name, ...phaseNames(experiment)]),
  );
  if (folderProblem !== null) problems.push(folderProblem);
  if (problems.length > 0) {
    for (const problem of problems) printError("run", problem, true);
    return EXIT_CODES.ERROR;
  }
  return await runLoaded(loaded, options, forceOption(options.force));
}

function forceOption(values: string[]): boolean | string[] {
  if (values.length === 0) return false;
  return values.includes(FORCE_ALL) ? true : values;
}

async function runLoaded(
  loaded: { file: string; experiment: Experiment }[],
  options: ResolvedRunOptions,
  force: boolean | string[],
): Promise<number> {
  const suite = loaded.length > 1;
  const progress = consoleProgress({ quiet: options.quiet });
  const uninstall = installSignalHandlers({ listenWhileIdle: true });
  const results: RunResult[] = [];
  try {
    for (const { file, experiment } of loaded) {
      const baseDir = dirname(resolve(file));
      const harnessEnv = Deno.env.toObject();
      // The one resolution of the run: the runner places it in its run folder (and --import's).
      const plan = resolvePlan(experiment, { baseDir, harnessEnv });
      results.push(
        await runExperiment({ plan, experiment }, {
          resultsDir: resolve(options.results),
          resultsShown: options.results,
          baseDir,
          experimentFile: resolve(file),
          only: options.only,
          keepGoing: options.keepGoing || suite,
          force,
          wait: options.wait,
          progress,
          harnessEnv,
          goldensDir: resolve(options.goldens),
          imageBaseUrl: options.imageBaseUrl || undefined,
          verifyCheckpoints: options.verifyCheckpoints ? "full" : "auto",
          noLaunch: !options.launch,
          importBundle: options.import || undefined,
        }),
      );
      if (results.at(-1)!.summary.interrupted) break;
    }
  } finally {
    uninstall();
  }
  if (suite) {
    const index = await writeSuiteIndex(
      resolve(options.results),
      results.map((r) => ({
        experiment: r.summary.experiment,
        runDir: r.runDir,
        summary: r.summary,
      })),
      { imageBaseUrl: options.imageBaseUrl || undefined },
    );
    const shown = { resultsDir: resolve(options.results), resultsShown: options.results };
    console.log(`suite index: ${shownPath(shown, index)}`);
  }
  // A suite exits with its worst verdict's code, by the judge's one mapping.
  return judgeVerdicts(results.map((r) => r.summary.verdict)).exit_code;
}
