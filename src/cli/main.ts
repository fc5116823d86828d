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
import { asHarnessError, EXIT_CODES, UsageError } from "../types/mod.ts";
import { helpPointer, printError } from "./_subcommand.ts";
import { createProgram } from "./program.ts";

/** Runs the harness command line on `argv` (the words after the program); returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  let exitCode: number = EXIT_CODES.PASS;
  const program = createProgram((code) => {
    exitCode = code;
  });
  try {
    await program.parseAsync(argv, { from: "user" });
  } catch (error) {
    // Commander has printed its own message (a usage error, or --help / --version).
    if (error instanceof CommanderError) {
      return error.exitCode === 0 ? EXIT_CODES.PASS : EXIT_CODES.USAGE;
    }
    const command = program.commands.find((c) => c.name() === argv[0])?.name() ?? "";
    return reportError(command, error);
  }
  return exitCode;
}

/**
 * The one place an error thrown by a command becomes the exit code. A harness error (or a
 * filesystem error, which is the environment's: ERROR) ends with its own exit code, told in one
 * sentence; a {@linkcode UsageError} then points to the command's help, as commander's own usage
 * errors do. Anything else is a bug: ERROR as `internal error` (never the FAIL that an uncaught
 * exception's exit 1 would mean), with its stack only when `PARITY_DEBUG` is set.
 */
function reportError(command: string, error: unknown): number {
  const known = asHarnessError(error);
  if (known !== null) {
    printError(command, known.message, known.exitCode === EXIT_CODES.ERROR);
    if (known instanceof UsageError) {
      console.error(helpPointer(`parity${command ? ` ${command}` : ""}`));
    }
    return known.exitCode;
  }
  const message = error instanceof Error ? error.message : String(error);
  printError(command, `internal error: ${message.split("\n")[0]}`, true);
  if (Deno.env.get("PARITY_DEBUG") && error instanceof Error) console.error(error.stack);
  return EXIT_CODES.ERROR;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
