/**
 * What every harness subcommand module exports, and the one way an action reports a usage
 * error. Subcommand modules (`<name>_command.ts`) build a commander {@linkcode Command}; the
 * program in `main.ts` lists them in {@linkcode SUBCOMMANDS} and turns their outcome into the
 * process exit code.
 *
 * @module
 */

import { type Command, InvalidArgumentError } from "commander";
import { EXIT_CODES } from "../types/mod.ts";

/** Receives the exit code a subcommand's action decided (README "Exit codes"). */
export type ExitCodeSink = (exitCode: number) => void;

/**
 * Builds one harness subcommand. Its action parses nothing by hand: it takes the typed options
 * commander produced, calls a domain function and hands the exit code to `exit`.
 */
export type Subcommand = (exit: ExitCodeSink) => Command;

/**
 * Ends `command` with a usage error: `parity <command>: <message>` on stderr, a pointer to
 * `--help`, exit code 2, no stack trace.
 */
export function usageError(command: Command, message: string): never {
  command.error(`error: ${message}`, { exitCode: EXIT_CODES.USAGE, code: "parity.usage" });
}

/**
 * A commander argument parser for a number `check` accepts; anything else is a usage error
 * naming the value and what was `expected`.
 */
export function numberArgument(
  check: (x: number) => boolean,
  expected: string,
): (raw: string) => number {
  return (raw) => {
    const x = Number(raw);
    if (raw.trim() === "" || !check(x)) throw new InvalidArgumentError(`expected ${expected}.`);
    return x;
  };
}

/**
 * Commander collector for a repeatable option: `--set a --set b` → `["a", "b"]` (undefined when
 * the option is absent, so help shows no default).
 */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/**
 * The line after a usage error that points to the command's help: `(run 'parity <command> --help'
 * for usage)`; `name` is `parity` or `parity <command>`.
 */
export function helpPointer(name: string): string {
  return `(run '${name} --help' for usage)`;
}

/**
 * Prints a diagnostic with the one error prefix of the CLI, `parity <command>: ` (`parity: `
 * outside a command); an ERROR (exit 3) says so first: `parity run: ERROR: the results folder ...`.
 */
export function printError(command: Command | string, message: string, error = false): void {
  const name = typeof command === "string" ? command : command.name();
  console.error(
    `parity${name === "" || name === "parity" ? "" : ` ${name}`}: ${
      error ? "ERROR: " : ""
    }${message}`,
  );
}

/**
 * Help text shown after a command's options: `Example:` lines (the same form in every command),
 * then an optional note.
 */
export function examples(lines: string[], note = ""): string {
  return `\nExample${lines.length > 1 ? "s" : ""}:\n${lines.map((l) => `  ${l}`).join("\n")}` +
    (note === "" ? "" : `\n\n${note}`);
}
