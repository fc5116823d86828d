/**
 * `parity plan <file> [--set KEY.PATH=VALUE]... [--results DIR] [--json] [--bundle DIR]`: prints the resolved
 * phase plan of each experiment in a file (phases, argv, environment with secrets redacted,
 * working folders, lanes, and which phases the cache would reuse) without launching or writing
 * anything. With `--bundle DIR` it writes the offline bundle of the experiment instead
 * (src/pipeline/offline/offline_bundle.ts: what `tools/offline_phases.py` runs on a machine without Deno)
 * and prints where. Exit 0, or 2 for an invalid file or usage.
 *
 * @module
 */

import { Command } from "commander";
import { dirname, resolve } from "node:path";
import { formatValidationErrors, readExperimentFile, resolvePlan } from "../experiment/mod.ts";
import { formatPlanPreview, type PlanPreview, previewPlan } from "../pipeline/running/mod.ts";
import { writeBundle } from "../pipeline/offline/mod.ts";
import { EXIT_CODES, UsageError } from "../types/mod.ts";
import { collect, examples, type Subcommand } from "./_subcommand.ts";

/** Options of `parity plan`, as commander parses them. */
interface PlanOptions {
  set?: string[];
  results: string;
  json?: boolean;
  bundle?: string;
  wheel?: string[];
}

/** Builds `parity plan`. */
export const planCommand: Subcommand = (exit): Command =>
  new Command("plan")
    .description("print the resolved phase plan (argv, env, cache) without running anything")
    .argument("<file>", "experiment file (YAML or JSON)")
    .option("--set <KEY.PATH=VALUE>", "override a field (repeatable)", collect)
    .option("--results <DIR>", "results folder the cache is looked up in", "results")
    .option("--json", "print the plan as JSON")
    .option("--bundle <DIR>", "write the offline bundle for tools/offline_phases.py to DIR")
    .option("--wheel <FILE>", "--bundle: a wheel the target installs first (repeatable)", collect)
    .addHelpText(
      "after",
      examples([
        "parity plan experiments/quickstart.yaml --json",
        "parity plan experiments/deepspeed/gpu_autoep_seed.yaml --bundle results/offline-bundle",
      ]),
    )
    .action(async (file: string, options: PlanOptions) => {
      const result = await readExperimentFile(file, { sets: options.set ?? [] });
      if (!result.ok) {
        console.error(formatValidationErrors(file, result.errors).join("\n"));
        return exit(EXIT_CODES.USAGE);
      }
      if (options.bundle !== undefined) {
        if (result.experiments.length !== 1) {
          throw new UsageError(
            `--bundle: ${file} expands to ${result.experiments.length} experiments; a bundle ` +
              "holds one (choose it with --set)",
          );
        }
        const experiment = result.experiments[0];
        const baseDir = dirname(resolve(file));
        const harnessEnv = Deno.env.toObject();
        const plan = resolvePlan(experiment, { baseDir, harnessEnv });
        const bundle = await writeBundle({ plan, experiment }, {
          bundleDir: resolve(options.bundle),
          baseDir,
          harnessEnv: Deno.env.toObject(),
          experimentFile: file,
          sets: options.set ?? [],
          wheels: options.wheel ?? [],
        });
        for (const note of bundle.notes) console.error(`note: ${note}`);
        console.log(
          `bundle ${options.bundle}: ${bundle.phases.length} phases of ${bundle.experiment}` +
            (bundle.wheels.length > 0 ? `, ${bundle.wheels.join(", ")}` : "") +
            `; run there: python3 tools/offline_phases.py ${options.bundle} [--python PY]`,
        );
        return exit(EXIT_CODES.PASS);
      }
      const previews: PlanPreview[] = [];
      for (const experiment of result.experiments) {
        const baseDir = dirname(resolve(file));
        const harnessEnv = Deno.env.toObject();
        const plan = resolvePlan(experiment, { baseDir, harnessEnv });
        previews.push(
          await previewPlan(plan, { resultsDir: resolve(options.results), baseDir, harnessEnv }),
        );
      }
      console.log(
        options.json
          ? JSON.stringify(previews.length === 1 ? previews[0] : previews, null, 2)
          : previews.map(formatPlanPreview).join("\n\n"),
      );
      exit(EXIT_CODES.PASS);
    });
