/**
 * The one base of the harness's errors. Each carries the exit code it ends the command line with
 * (README "Exit codes"), as fresh's `HttpError` carries its status, so `cli/main.ts` maps any
 * error to an exit code in one place. The trainer (`reference_trainer`) is a separate program on the
 * far side of the process contract and `src/affine` imports nothing; each keeps one base of its
 * own (`TrainerExitError`, `AffineError`).
 *
 * @module
 */

import { EXIT_CODES, type ExitCode } from "./exit_codes.ts";

/** An error the harness expects, with the exit code the command line ends with. */
export class HarnessError extends Error {
  /** The exit code of the command that this error ends (never PASS). */
  readonly exitCode: ExitCode;

  /**
   * Creates the error. `message` is the one sentence shown to the user, after
   * `parity <command>: ` (and `ERROR: ` when `exitCode` is ERROR).
   */
  constructor(message: string, exitCode: ExitCode, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.exitCode = exitCode;
  }
}

/**
 * A usage error: a malformed `--set`, a bad run folder or repository given on the command line
 * (exit 2, nothing launched).
 *
 * @example
 * ```ts
 * throw new UsageError("--set x: expected KEY.PATH=VALUE");
 * ```
 */
export class UsageError extends HarnessError {
  /** Creates the error with a message naming the argument or value. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, EXIT_CODES.USAGE, options);
  }
}
