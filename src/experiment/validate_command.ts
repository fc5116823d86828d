/**
 * `deno task parity validate <file>... [--set KEY.PATH=VALUE]...`: checks experiment files
 * without launching anything; exit 0 when every file is valid, 2 otherwise.
 *
 * @module
 */

import { formatValidationErrors, UsageError } from "./errors.ts";
import { parseSetArgument } from "./overrides.ts";
import { readExperimentFile } from "./validate.ts";

/** Where {@link validateCommand} writes (console by default; tests capture lines). */
export interface CommandOutput {
  /** One line of normal output. */
  out(line: string): void;
  /** One line of error output. */
  err(line: string): void;
}

const consoleOutput: CommandOutput = {
  out: (line) => console.log(line),
  err: (line) => console.error(line),
};

/**
 * Runs `validate`: prints `ok <file> (N experiments: a, b)` per valid file and every problem as
 * `<file>: <path>: <message>`. Returns the exit code: 0 all valid, 2 otherwise (also for usage
 * errors such as no files or a malformed `--set`).
 */
export async function validateCommand(
  args: string[],
  output: CommandOutput = consoleOutput,
): Promise<number> {
  const files: string[] = [];
  const sets: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") {
      files.push(...args.slice(i + 1));
      break;
    }
    if (arg === "--set") {
      if (i + 1 >= args.length) {
        output.err("usage: --set needs KEY.PATH=VALUE");
        return 2;
      }
      sets.push(args[++i]);
    } else if (arg.startsWith("--set=")) {
      sets.push(arg.slice("--set=".length));
    } else if (arg.startsWith("-") && arg !== "-") {
      output.err(`usage: unknown option ${arg} (validate <file>... [--set KEY.PATH=VALUE]...)`);
      return 2;
    } else {
      files.push(arg);
    }
  }
  if (files.length === 0) {
    output.err("usage: validate <file>... [--set KEY.PATH=VALUE]...");
    return 2;
  }
  // A malformed --set is one usage error, not one per file.
  for (const set of sets) {
    try {
      parseSetArgument(set);
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      output.err(`usage: ${error.message}`);
      return 2;
    }
  }
  let failed = false;
  for (const file of files) {
    const result = await readExperimentFile(file, { sets });
    if (result.ok) {
      const names = result.experiments.map((exp) => exp.name);
      const noun = names.length === 1 ? "experiment" : "experiments";
      output.out(`ok ${file} (${names.length} ${noun}: ${names.join(", ")})`);
    } else {
      failed = true;
      for (const line of formatValidationErrors(file, result.errors)) output.err(line);
    }
  }
  return failed ? 2 : 0;
}
