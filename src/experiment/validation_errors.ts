/**
 * Problems found in an experiment file, and how they are printed.
 *
 * @module
 */

import { EXIT_CODES, HarnessError } from "../types/mod.ts";

/** The harness's one usage error (a malformed `--set`), re-exported for the loaders' callers. */
export { UsageError } from "../types/mod.ts";

/** One problem of an experiment file, at a dotted path such as `resume.reshard.args.world_size`. */
export interface ValidationError {
  /** Dotted path with `[i]` for list items; empty for the file as a whole. */
  path: string;
  /** What is wrong, for a human (`expected a positive integer`). */
  message: string;
}

/** Outcome of {@link validateExperiment}-style checks. */
export type ValidationResult<T> =
  | { ok: true; experiments: T[] }
  | { ok: false; errors: ValidationError[] };

/**
 * Thrown by the loaders when a file cannot be read or parsed; carries every problem found (an
 * invalid experiment file: exit 2).
 */
export class ExperimentFileError extends HarnessError {
  /** The file (or source name) the problems belong to. */
  readonly source: string;
  /** The problems, at least one. */
  readonly errors: ValidationError[];

  /** Builds the error; the message is the formatted lines. */
  constructor(source: string, errors: ValidationError[]) {
    super(formatValidationErrors(source, errors).join("\n"), EXIT_CODES.USAGE);
    this.source = source;
    this.errors = errors;
  }
}

/**
 * Formats problems as one line each: `experiments/x.yaml: trainer.args.fault: unknown fault ...`
 * (or `source: message` for problems of the whole file).
 */
export function formatValidationErrors(source: string, errors: ValidationError[]): string[] {
  return errors.map((error) =>
    error.path === "" ? `${source}: ${error.message}` : `${source}: ${error.path}: ${error.message}`
  );
}
