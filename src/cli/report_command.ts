/**
 * `parity report <run-dir>`: re-renders report.md, report.html, junit.xml and charts/ of a
 * finished run from its stored artifacts (docs/reports.md). Exit 0 when written, 2 on a usage
 * error or a missing run folder, 3 when rendering failed or the run's artifacts no longer match
 * the content hashes its phases recorded (a tampered or corrupted run folder is not re-rendered).
 *
 * @module
 */

import { FULL_VERIFY_LIMIT_GIB, runArtifactProblems } from "../pipeline/store/mod.ts";
import { Command } from "commander";
import { imageBaseUrlProblem, renderRun, resolveRunDir } from "../report/mod.ts";
import { EXIT_CODES, HarnessError } from "../types/mod.ts";
import { examples, printError, type Subcommand, usageError } from "./_subcommand.ts";

/** Builds `parity report`. */
export const reportCommand: Subcommand = (exit): Command =>
  new Command("report")
    .description("re-render every output of a finished run")
    .argument(
      "<run-dir>",
      'a run folder, or an experiment folder or its "latest" entry (the newest run)',
    )
    .option(
      "--image-base-url <url>",
      "URL where CI publishes the results folder: report.md links become absolute",
    )
    .option(
      "--verify-checkpoints",
      `re-hash every checkpoint in full (default: only those up to ${FULL_VERIFY_LIMIT_GIB} GiB)`,
    )
    .addHelpText(
      "after",
      examples(
        ["parity report results/quickstart/latest --image-base-url https://ci.example.org/results/"],
        "Reads summary.json, losses.csv, experiment.resolved.yaml and phases/* of the run.",
      ),
    )
    .action(async function (
      this: Command,
      path: string,
      options: { imageBaseUrl?: string; verifyCheckpoints?: boolean },
    ) {
      const problem = options.imageBaseUrl ? imageBaseUrlProblem(options.imageBaseUrl) : null;
      if (problem) return usageError(this, problem);
      let runDir: string;
      try {
        runDir = await resolveRunDir(path);
      } catch (error) {
        throw new HarnessError((error as Error).message, EXIT_CODES.USAGE, { cause: error });
      }
      const problems = await runArtifactProblems(
        runDir,
        options.verifyCheckpoints ? "full" : "auto",
      );
      if (problems.length > 0) {
        for (const problem of problems) printError("report", problem, true);
        throw new HarnessError(
          `${runDir}: the artifacts no longer match the run's record; not rendering`,
          EXIT_CODES.ERROR,
        );
      }
      try {
        const start = performance.now();
        await renderRun(runDir, { imageBaseUrl: options.imageBaseUrl });
        const ms = Math.round(performance.now() - start);
        console.log(`wrote ${runDir}/report.md, report.html, junit.xml and charts/ (${ms} ms)`);
        exit(EXIT_CODES.PASS);
      } catch (error) {
        // One sentence (the loaders name the bad file); the stack only with PARITY_DEBUG set.
        const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        if (Deno.env.get("PARITY_DEBUG")) console.error((error as Error).stack);
        throw new HarnessError(
          `rendering ${runDir} failed: ${message.split("\n")[0]}`,
          EXIT_CODES.ERROR,
          { cause: error },
        );
      }
    });
