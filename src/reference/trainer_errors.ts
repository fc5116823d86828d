/**
 * Error classes of the reference trainer. Each carries the exit code the CLI ends with, so a
 * bad flag (2) and a broken checkpoint (1) read differently to the harness.
 *
 * @module
 */

/** Bad command line or flag value: the CLI exits 2 and nothing is written. */
export class UsageError extends Error {
  /** Exit code the CLI ends with. */
  readonly exitCode = 2;
  /** Creates the error with a one-line message naming the flag or value. */
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** Something failed at run time (missing or corrupt checkpoint, refused conversion): exit 1. */
export class TrainerError extends Error {
  /** Exit code the CLI ends with. */
  readonly exitCode = 1;
  /** Creates the error with a one-line message naming the file or state involved. */
  constructor(message: string) {
    super(message);
    this.name = "TrainerError";
  }
}

/** A checkpoint folder or file is missing, incomplete, corrupt or does not fit the run. */
export class CheckpointError extends TrainerError {
  /** Creates the error with a message naming the checkpoint path. */
  constructor(message: string) {
    super(message);
    this.name = "CheckpointError";
  }
}
