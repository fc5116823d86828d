/**
 * The one commander program of `parity`: every subcommand of `subcommands.ts`, with the same
 * output, error and help behaviour. `main.ts` runs it and turns its outcome into the exit code.
 *
 * @module
 */

import { Command } from "commander";
import { HARNESS_VERSION } from "../pipeline/store/mod.ts";
import { examples, type ExitCodeSink, helpPointer } from "./_subcommand.ts";
import { SUBCOMMANDS } from "./subcommands.ts";

/**
 * The `parity` program with every subcommand. Errors never exit the process: commander throws
 * a {@linkcode CommanderError} instead, which {@linkcode main} turns into an exit code.
 */
export function createProgram(exit: ExitCodeSink): Command {
  const program = new Command("parity")
    .usage("<command> [options]")
    .description("resume-parity experiments for large-model training")
    .version(`parity ${HARNESS_VERSION}`, "-V, --version", "print the harness version")
    .addHelpText(
      "after",
      examples(
        ["parity run experiments/quickstart.yaml", "parity validate experiments/*.yaml"],
        "Exit codes: 0 PASS, 1 FAIL, 2 bad input or usage, 3 ERROR, 4 ABSTAIN.\n" +
          "Run 'parity <command> --help' for a command's options.",
      ),
    );
  for (const subcommand of SUBCOMMANDS) program.addCommand(subcommand(exit));
  for (const command of [program, ...program.commands]) _configure(command);
  return program;
}

/**
 * Same behaviour for every command: throw instead of exiting, write through the console (so
 * tests capture it), and print a usage error as `parity <command>: <message>` with a pointer to
 * the command's help.
 */
function _configure(command: Command): void {
  const name = command.parent ? `parity ${command.name()}` : "parity";
  command
    .exitOverride()
    .configureOutput({
      writeOut: (text) => console.log(text.replace(/\n$/, "")),
      writeErr: (text) => console.error(text.replace(/\n$/, "")),
      outputError: (text, write) => write(text.replace(/^error: /, `${name}: `)),
    })
    .showHelpAfterError(helpPointer(name));
}
