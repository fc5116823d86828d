/**
 * `parity validate <file>... [--set KEY.PATH=VALUE]...`: checks experiment files without launching
 * anything. Prints `ok <file> (N experiments: a, b)` per valid file and every problem as
 * `<file>: <path>: <message>`; exit 0 when every file is valid, 2 otherwise (also for a usage
 * error such as no file or a malformed `--set`).
 *
 * @module
 */

import { Command } from "commander";
import { formatValidationErrors, parseSetArgument, readExperimentFile } from "../experiment/mod.ts";
import { EXIT_CODES } from "../types/mod.ts";
import { collect, examples, type Subcommand } from "./_subcommand.ts";

/** Builds `parity validate`. */
export const validateCommand: Subcommand = (exit): Command => {
  const command = new Command("validate")
    .description("check experiment files without running anything")
    .argument("<file...>", "experiment files (YAML or JSON)")
    .option("--set <KEY.PATH=VALUE>", "override a field of every experiment (repeatable)", collect)
    .addHelpText("after", examples(["parity validate experiments/*.yaml --set schedule.steps=60"]))
    .action(async (files: string[], options: { set?: string[] }) => {
      const sets = options.set ?? [];
      // A malformed --set is one usage error (parseSetArgument throws it), not one per file.
      for (const set of sets) parseSetArgument(set);
      exit(await validateFiles(files, sets));
    });
  return command;
};

async function validateFiles(files: string[], sets: string[]): Promise<number> {
  let failed = false;
  for (const file of files) {
    const result = await readExperimentFile(file, { sets });
    if (result.ok) {
      const names = result.experiments.map((experiment) => experiment.name);
      const noun = names.length === 1 ? "experiment" : "experiments";
      console.log(`ok ${file} (${names.length} ${noun}: ${names.join(", ")})`);
    } else {
      failed = true;
      for (const line of formatValidationErrors(file, result.errors)) console.error(line);
    }
  }
  return failed ? EXIT_CODES.USAGE : EXIT_CODES.PASS;
}
