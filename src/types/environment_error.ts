/**
 * Environment errors: a results folder that is missing, a file, read-only or full, a path too long
 * for the filesystem. They are the machine's fault, not the experiment's, so the command line
 * reports them as ERROR (exit 3) in one sentence instead of a stack trace (exit 1 means FAIL).
 *
 * @module
 */

import { EXIT_CODES } from "./exit_codes.ts";
import { HarnessError } from "./harness_error.ts";

/** An environment problem already phrased as one sentence for the user (ERROR, exit 3). */
export class EnvironmentError extends HarnessError {
  /** Create an error whose message is the sentence shown to the user. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, EXIT_CODES.ERROR, options);
  }
}

/** The OS error codes Deno attaches to filesystem errors (`error.code`), and what they mean. */
const OS_ERRORS: Record<string, string> = {
  ENOENT: "no such file or folder",
  EACCES: "permission denied",
  EEXIST: "already exists",
  ENOTDIR: "a path component is a file, not a folder",
  EISDIR: "is a folder, not a file",
  ENOSPC: "no space left on the device",
  EROFS: "the filesystem is read-only",
  ENAMETOOLONG: "a file name is too long for the filesystem",
  ELOOP: "too many levels of symbolic links",
  EDQUOT: "disk quota exceeded",
};

/**
 * One sentence describing `error` when it is an environment problem (a filesystem error from
 * Deno, or an {@linkcode EnvironmentError}); `null` for anything else (a bug). The error is
 * recognised by its class or its `code`, never by its text; the text is only shown, without
 * Deno's `(os error N)` suffix.
 *
 * @example
 * ```ts
 * const error = Object.assign(new Error("File name too long (os error 36): mkdir 'r/x'"), {
 *   code: "ENAMETOOLONG",
 * });
 * describeEnvironmentError(error); // => "File name too long: mkdir 'r/x'"
 * ```
 */
export function describeEnvironmentError(error: unknown): string | null {
  if (error instanceof EnvironmentError) return error.message;
  if (!(error instanceof Error)) return null;
  const code = (error as { code?: unknown }).code;
  const known = typeof code === "string" ? OS_ERRORS[code] : undefined;
  const isDenoFsError = Object.values(Deno.errors).some((kind) => error instanceof kind);
  if (known === undefined && !isDenoFsError) return null;
  const shown = error.message.replace(/\s*\(os error \d+\)/, "");
  const detail = oneLine(shown);
  // Deno's own message already names the problem; a bare one gets the meaning of its code.
  return known === undefined || shown !== error.message ? detail : `${known}: ${detail}`;
}

/**
 * `error` as the harness error it ends a command with: itself when it is a
 * {@linkcode HarnessError}, an {@linkcode EnvironmentError} (ERROR) for a filesystem error from
 * Deno, `null` for anything else (a bug).
 *
 * @example
 * ```ts
 * asHarnessError(new Deno.errors.NotFound("No such file or directory (os error 2): open 'x'"))
 *   ?.exitCode; // => 3
 * ```
 */
export function asHarnessError(error: unknown): HarnessError | null {
  if (error instanceof HarnessError) return error;
  const sentence = describeEnvironmentError(error);
  return sentence === null ? null : new EnvironmentError(sentence, { cause: error });
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, " ").trim();
}
