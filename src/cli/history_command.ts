/**
 * `parity history [results-dir] [--experiment NAME] [--limit N]`: renders the trend chart of
 * `<results>/history.csv` and prints the newest rows as a Markdown table (docs/reports.md). Exit 0
 * when rendered, 2 on a usage error or when there is no history to show.
 *
 * @module
 */

import { Command } from "commander";
import { historyPath, renderHistoryView } from "../report/mod.ts";
import { EXIT_CODES, HarnessError } from "../types/mod.ts";
import { examples, numberArgument, type Subcommand } from "./_subcommand.ts";

const positiveInteger = numberArgument((x) => Number.isInteger(x) && x >= 1, "an integer >= 1");

/** Builds `parity history`. */
export const historyCommand: Subcommand = (exit): Command =>
  new Command("history")
    .description("trend chart and table of past runs")
    .argument("[results-dir]", "results folder", "results")
    .option("--experiment <name>", "only this experiment")
    .option("--limit <N>", "newest rows shown", positiveInteger, 30)
    .addHelpText(
      "after",
      examples(
        ["parity history results --experiment quickstart"],
        "Writes <results>/history/index.html (interactive trend, each point linking to its run)\n" +
          "and <results>/history/history-trend.{vl.json,svg,png} from <results>/history.csv.",
      ),
    )
    .action(async (resultsDir: string, options: { experiment?: string; limit: number }) => {
      const view = await renderHistoryView(resultsDir, options);
      if (view === undefined) {
        const dir = resultsDir.replace(/\/+$/, "") || "/";
        const which = options.experiment ? ` for experiment "${options.experiment}"` : "";
        throw new HarnessError(`no history in ${historyPath(dir)}${which}`, EXIT_CODES.USAGE);
      }
      console.log(view.markdown);
      // Paths, not a Markdown image: a local absolute path renders nowhere.
      console.log(`\ntrend: ${view.html}\nchart: ${view.png}`);
      exit(EXIT_CODES.PASS);
    });
