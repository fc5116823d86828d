/**
 * `parity rerun <run-dir> [--goldens DIR] [--wait] [--quiet]`: re-runs every phase of a stored
 * run from its `experiment.resolved.yaml` and manifest alone (no cache), into a new run folder,
 * and compares each phase's metrics with the stored ones bit for bit. Exit 0 REPRODUCED,
 * 1 DRIFTED, 2 a bad run folder, 3 ERROR (docs/reports.md, "Rerun").
 *
 * @module
 */

import { Command } from "commander";
import { resolve } from "node:path";
import { consoleProgress } from "./console_progress.ts";
import { DEFAULT_GOLDENS_DIR } from "../types/mod.ts";
import { installSignalHandlers } from "../process/mod.ts";
import { formatRerun, rerunRun } from "../reproduce/mod.ts";
import { examples, type Subcommand } from "./_subcommand.ts";

/** Builds `parity rerun`. */
export const rerunCommand: Subcommand = (exit): Command => {
  const command = new Command("rerun")
    .description("re-run every phase of a run folder (no cache) and compare bit for bit")
    .argument("<run-dir>", "a run folder (or an experiment folder: its latest run)")
    .option("--goldens <dir>", "goldens folder for golden: true", DEFAULT_GOLDENS_DIR)
    .option("--wait", "wait for another run of the same experiment to finish")
    .option("--quiet", "no phase progress: only notes, errors and the result")
    .addHelpText("after", examples(["parity rerun results/quickstart/latest"]))
    .action(
      async (runDir: string, options: { goldens: string; wait?: boolean; quiet?: boolean }) => {
        const uninstall = installSignalHandlers({ listenWhileIdle: true });
        try {
          const result = await rerunRun(runDir, {
            // The command's result is its own verdict: each run's verdict line goes to stderr.
            progress: consoleProgress({
              quiet: options.quiet ?? false,
              result: (line) => console.error(line),
            }),
            harnessEnv: Deno.env.toObject(),
            goldensDir: resolve(options.goldens),
            wait: options.wait ?? false,
          });
          console.log(formatRerun(result));
          exit(result.exit_code);
        } finally {
          uninstall();
        }
      },
    );
  return command;
};
