/**
 * Error classes of the reference trainer, under one base that carries the exit code the CLI ends
 * with, so a bad flag (2) and a broken checkpoint (1) read differently to the harness.
 *
 * The trainer is a separate program on the far side of the process contract: `reference_trainer`
 * imports nothing of the harness (only `src/affine`; see test/layers_test.ts), so it keeps this
 * base and its own `UsageError` rather than the harness's `HarnessError` in `src/types`.
 *
 * @module
 */

/** Exit codes of the trainer CLI, its side of the process contract. */
export const TRAINER_EXIT_CODES = {
  /** The command did its job (also `--help`). */
  OK: 0,
  /** A run-time failure: missing, corrupt or unfit checkpoint, refused conversion. */
  FAILED: 1,
  /** A bad command line or flag value: nothing was written. */
  USAGE: 2,
} as const;

/** One of the trainer CLI's exit codes. */
export type TrainerExitCode = (typeof TRAINER_EXIT_CODES)[keyof typeof TRAINER_EXIT_CODES];

/** The one base of the trainer's errors: the CLI prints the message and ends with `exitCode`. */
export class TrainerExitError extends Error {
  /** Exit code the CLI ends with. */
  readonly exitCode: TrainerExitCode;

  /** Creates the error with a one-line message and the exit code it ends the CLI with. */
  constructor(message: string, exitCode: TrainerExitCode) {
    super(message);
    this.name = new.target.name;
    this.exitCode = exitCode;
  }
}

/** Bad command line or flag value: the CLI exits 2 and nothing is written. */
export class UsageError extends TrainerExitError {
  /** Creates the error with a one-line message naming the flag or value. */
  constructor(message: string) {
    super(message, TRAINER_EXIT_CODES.USAGE);
  }
}

/** Something failed at run time (missing or corrupt checkpoint, refused conversion): exit 1. */
export class TrainerError extends TrainerExitError {
  /** Creates the error with a one-line message naming the file or state involved. */
  constructor(message: string) {
    super(message, TRAINER_EXIT_CODES.FAILED);
  }
}

/** A checkpoint folder or file is missing, incomplete, corrupt or does not fit the run. */
export class CheckpointError extends TrainerError {}
