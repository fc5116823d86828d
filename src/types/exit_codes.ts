/**
 * The harness's exit codes (README "Exit codes"): the one table every command, verdict and error
 * maps onto. A suite exits with the worst verdict's code.
 *
 * @module
 */

/**
 * Exit code by meaning: a verdict's name (`EXIT_CODES[verdict]`), or `USAGE` for an invalid
 * experiment file or usage (nothing was launched).
 */
export const EXIT_CODES = {
  /** Every verdict PASS. */
  PASS: 0,
  /** Some verdict FAIL: a proven divergence (it outranks ERROR). */
  FAIL: 1,
  /** An invalid experiment file or usage: nothing was launched. */
  USAGE: 2,
  /** A phase could not complete, the environment failed, or another run holds the folder. */
  ERROR: 3,
  /** The noise floor made an exact verdict impossible, and no FAIL or ERROR occurred. */
  ABSTAIN: 4,
} as const;

/** One of the harness's exit codes. */
export type ExitCode = (typeof EXIT_CODES)[keyof typeof EXIT_CODES];
