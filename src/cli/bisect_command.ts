/**
 * `parity bisect <file> --repo DIR --good REV --bad REV`: finds the commit of a code-input
 * repository that broke parity, marking each tested commit good (PASS), bad (FAIL) or skip
 * (ERROR, ABSTAIN) with `git bisect`, and always resets the bisect (also on SIGINT). Exit 0 when
 * found, 2 for bad usage, 3 when inconclusive or interrupted (docs/reports.md, "Bisect").
 *
 * @module
 */

import { Command } from "commander";
import { dirname, resolve } from "node:path";
import { formatValidationErrors, readExperimentFile } from "../experiment/mod.ts";
import { consoleProgress } from "./console_progress.ts";
import { DEFAULT_GOLDENS_DIR, EXIT_CODES } from "../types/mod.ts";
import { installSignalHandlers } from "../process/mod.ts";
import { bisect, bisectPackage, formatBisect, formatPackageBisect } from "../reproduce/mod.ts";
import { collect, examples, type Subcommand, usageError } from "./_subcommand.ts";

/** Options of `parity bisect`, as commander parses them. */
interface BisectCommandOptions {
  repo?: string;
  package?: string;
  good: string;
  bad: string;
  set?: string[];
  results: string;
  goldens: string;
  quiet?: boolean;
}

/** Builds `parity bisect`. */
export const bisectCommand: Subcommand = (exit): Command => {
  const command = new Command("bisect")
    .description("find the commit of a code input that broke parity")
    .argument("<file>", "experiment file (YAML or JSON)")
    .option("--repo <dir>", "git repository that is one of the experiment's code inputs")
    .option(
      "--package <name>",
      "bisect the published releases of the trainer preset's framework instead (deepspeed)",
    )
    .requiredOption("--good <rev>", "a revision (or release) whose run passes")
    .requiredOption("--bad <rev>", "a revision (or release) whose run fails")
    .option("--set <KEY.PATH=VALUE>", "override a field (repeatable)", collect)
    .option("--results <dir>", "results folder", "results")
    .option("--goldens <dir>", "goldens folder for golden: true", DEFAULT_GOLDENS_DIR)
    .addHelpText(
      "after",
      examples([
        "parity bisect experiments/deepspeed/cpu_autoep.yaml --repo ../DeepSpeed --good v0.19.7 --bad HEAD",
        "parity bisect --package deepspeed --good 0.17.5 --bad 0.18.4 experiments/deepspeed/known_bugs/pr7786_bf16_zero0.yaml",
      ]),
    )
    .option("--quiet", "print phase start/end lines only")
    .action(async (file: string, options: BisectCommandOptions) => {
      const loaded = await readExperimentFile(file, { sets: options.set ?? [] });
      if (!loaded.ok) {
        console.error(formatValidationErrors(file, loaded.errors).join("\n"));
        return exit(EXIT_CODES.USAGE);
      }
      if (loaded.experiments.length !== 1) {
        usageError(command, "the file expands to several experiments; pick one with --set");
      }
      if ((options.repo === undefined) === (options.package === undefined)) {
        usageError(command, "give exactly one of --repo <dir> and --package <name>");
      }
      const uninstall = installSignalHandlers({ listenWhileIdle: true });
      // The command's result is its own verdict: each run's verdict line goes to stderr.
      const progress = consoleProgress({
        quiet: options.quiet ?? false,
        result: (line) => console.error(line),
      });
      // What a bisect over releases and one over commits share.
      const common = {
        experiment: loaded.experiments[0],
        experimentFile: resolve(file),
        baseDir: dirname(resolve(file)),
        resultsDir: resolve(options.results),
        goldensDir: resolve(options.goldens),
        good: options.good,
        bad: options.bad,
        progress,
        harnessEnv: Deno.env.toObject(),
      };
      try {
        if (options.package !== undefined) {
          const result = await bisectPackage({ ...common, package: options.package });
          console.log(formatPackageBisect(options.package, result));
          return exit(result.exit_code);
        }
        const result = await bisect({ ...common, repo: resolve(options.repo!) });
        console.log(formatBisect(result));
        exit(result.exit_code);
      } finally {
        uninstall();
      }
    });
  return command;
};
