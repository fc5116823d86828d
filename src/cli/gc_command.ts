/**
 * `parity gc [results-dir] [--dry-run] [--experiment NAME] [--json]`: deletes checkpoint folders
 * no cached phase still needs (see `src/pipeline/store/gc.ts` for which) and prints one line per folder
 * with its size, then the total. Exit 0, or 2 on a usage error or a missing folder.
 *
 * @module
 */

import { Command } from "commander";
import { collectGarbage, formatGcReport, type GcReport } from "../pipeline/store/mod.ts";
import { EXIT_CODES, HarnessError } from "../types/mod.ts";
import { examples, type Subcommand } from "./_subcommand.ts";

/** Options of `parity gc`, as commander parses them. */
export interface GcCommandOptions {
  /** List what would be deleted, delete nothing. */
  dryRun?: boolean;
  /** Only this experiment. */
  experiment?: string;
  /** Print the report as JSON. */
  json?: boolean;
}

/** Builds `parity gc`. */
export const gcCommand: Subcommand = (exit): Command =>
  new Command("gc")
    .description("delete checkpoints that no cached phase still needs")
    .argument("[results-dir]", "results folder", "results")
    .option("--dry-run", "list what would be deleted, delete nothing")
    .option("--experiment <name>", "only this experiment")
    .option("--json", "print the report as JSON")
    .addHelpText(
      "after",
      examples(["parity gc results --dry-run"]) + `

Deletes checkpoint folders (split checkpoints/, convert *_universal/) that no cached phase still
needs: kept are the run 'latest' names, the runs it reuses, and runs newer than it. Metrics, logs
and reports are never deleted.`,
    )
    .action(async (resultsDir: string, options: GcCommandOptions) => {
      let report: GcReport;
      try {
        report = await collectGarbage(resultsDir, {
          dryRun: options.dryRun,
          experiment: options.experiment,
        });
      } catch (e) {
        // A results folder that is not there is a usage error, not the environment's ERROR.
        if (!(e instanceof Deno.errors.NotFound)) throw e;
        throw new HarnessError(`no folder ${resultsDir}`, EXIT_CODES.USAGE, { cause: e });
      }
      console.log(options.json ? JSON.stringify(report, null, 2) : formatGcReport(report));
      exit(EXIT_CODES.PASS);
    });
