/**
 * `parity plan <file> [--set KEY.PATH=VALUE]... [--results DIR] [--json]`: prints the resolved
 * phase plan of each experiment in a file (phases, argv, environment with secrets redacted,
 * working folders, lanes, and which phases the cache would reuse) without launching or writing
 * anything. Exit 0, or 2 for an invalid file or usage.
 *
 * @module
 */

import { Command } from "commander";
import { dirname, resolve } from "node:path";
import { formatValidationErrors, readExperimentFile } from "../experiment/mod.ts";
import { formatPlanPreview, type PlanPreview, previewPlan } from "../pipeline/plan_preview.ts";
import { EXIT_CODES } from "../types/exit_codes.ts";
import { collect, examples, type Subcommand } from "./_subcommand.ts";

/** Builds `parity plan`. */
export const planCommand: Subcommand = (exit): Command =>
  new Command("plan")
    .description("print the resolved phase plan (argv, env, cache) without running anything")
    .argument("<file>", "experiment file (YAML or JSON)")
    .option("--set <KEY.PATH=VALUE>", "override a field (repeatable)", collect)
    .option("--results <DIR>", "results folder the cache is looked up in", "results")
    .option("--json", "print the plan as JSON")
    .addHelpText("after", examples(["parity plan experiments/quickstart.yaml --json"]))
    .action(async (file: string, options: { set?: string[]; results: string; json?: boolean }) => {
      const result = await readExperimentFile(file, { sets: options.set ?? [] });
      if (!result.ok) {
        console.error(formatValidationErrors(file, result.errors).join("\n"));
        return exit(EXIT_CODES.USAGE);
      }
      const previews: PlanPreview[] = [];
      for (const experiment of result.experiments) {
        previews.push(
          await previewPlan(experiment, {
            resultsDir: resolve(options.results),
            baseDir: dirname(resolve(file)),
            harnessEnv: Deno.env.toObject(),
          }),
        );
      }
      console.log(
        options.json
          ? JSON.stringify(previews.length === 1 ? previews[0] : previews, null, 2)
          : previews.map(formatPlanPreview).join("\n\n"),
      );
      exit(EXIT_CODES.PASS);
    });
