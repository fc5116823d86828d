/**
 * `parity golden save <run-dir> [--goldens DIR]`: stores the run's baseline metrics (full
 * precision, with the noise floor when measured) as the golden of its environment, under
 * `<goldens>/<experiment>/<environment-key>.jsonl` (docs/reports.md, "Goldens").
 *
 * @module
 */

import { Command } from "commander";
import { resolve } from "node:path";
import { DEFAULT_GOLDENS_DIR, EXIT_CODES } from "../types/mod.ts";
import { saveGolden } from "../reproduce/mod.ts";
import { examples, type Subcommand } from "./_subcommand.ts";

/** Builds `parity golden` with its one action, `save`. */
export const goldenCommand: Subcommand = (exit): Command => {
  const command = new Command("golden")
    .description("keep per-environment golden baselines: golden save <run-dir>")
    .addHelpText("after", examples(["parity golden save results/quickstart/latest"]));
  const save = new Command("save")
    .description("store the run's baseline as the golden of its environment")
    .argument("<run-dir>", "a run folder")
    .option("--goldens <dir>", "goldens folder", DEFAULT_GOLDENS_DIR)
    .addHelpText("after", examples(["parity golden save results/quickstart/latest"]))
    .action(async (runDir: string, options: { goldens: string }) => {
      const saved = await saveGolden(runDir, {
        goldensDir: resolve(options.goldens),
        harnessEnv: Deno.env.toObject(),
      });
      console.log(
        `${saved.replaced ? "replaced" : "saved"} golden ${saved.file}\n  environment ` +
          `${saved.key}, ${saved.steps} steps, metrics ${saved.metrics.join(", ")}`,
      );
      exit(EXIT_CODES.PASS);
    });
  return command.addCommand(save);
};
