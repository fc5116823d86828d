/**
 * The harness command line, `parity <command> [options]` (`deno task parity ...`;
 * `deno task run-experiment <file>...` is `parity run`). One commander program holds every
 * subcommand listed in `subcommands.ts`; `parity <command> --help` prints that command's usage.
 * Exit codes follow README "Exit codes": 0 PASS, 1 FAIL, 2 invalid experiment or usage (nothing
 * launched), 3 ERROR, 4 ABSTAIN.
 *
 * @module
 */

import { CommanderError } from "commander";
import { PlaceholderError } from "../experiment/mod.ts";
import { describeEnvironmentError } from "../pipeline/environment_error.ts";
import { LockHeldError } from "../pipeline/lock.ts";
import { printError, USAGE_EXIT_CODE } from "./_subcommand.ts";
import { createProgram } from "./program.ts";

/** Runs the harness command line on `argv` (the words after the program); returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  let exitCode = 0;
  const program = createProgram((code) => {
    exitCode = code;
  });
  try {
    await program.parseAsync(argv, { from: "user" });
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : USAGE_EXIT_CODE;
    const command = program.commands.find((c) => c.name() === argv[0])?.name() ?? "";
    if (error instanceof LockHeldError) {
      printError(command, error.message, true);
      return 3;
    }
    return reportUncaught(command, error);
  }
  return exitCode;
}

/**
 * An unexpandable placeholder (an unset `${env.X}`) is invalid input (exit 2). Any other error
 * is ERROR (exit 3), never the FAIL that an uncaught exception's exit 1 would mean: an environment problem in one sentence, a bug as `internal error` with its stack only
 * when `PARITY_DEBUG` is set.
 */
function reportUncaught(command: string, error: unknown): number {
  if (error instanceof PlaceholderError) {
    // A placeholder only the run can expand (an unset ${env.X}): invalid input, nothing judged.
    printError(command, `invalid experiment: ${error.message}`);
    return USAGE_EXIT_CODE;
  }
  const environment = describeEnvironmentError(error);
  if (environment !== null) {
    printError(command, environment, true);
  } else {
    const message = error instanceof Error ? error.message : String(error);
    printError(command, `internal error: ${message.split("\n")[0]}`, true);
    if (Deno.env.get("PARITY_DEBUG") && error instanceof Error) console.error(error.stack);
  }
  return 3;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
