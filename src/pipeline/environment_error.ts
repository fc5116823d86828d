/**
 * Environment errors: a results folder that is missing, a file, read-only or full, a path too long
 * for the filesystem. They are the machine's fault, not the experiment's, so the command line
 * reports them as ERROR (exit 3) in one sentence instead of a stack trace (exit 1 means FAIL).
 *
 * @module
 */

import { EXIT_CODES } from "../types/exit_codes.ts";
import { HarnessError } from "../types/harness_error.ts";

/** An environment problem already phrased as one sentence for the user (ERROR, exit 3). */
export class EnvironmentError extends HarnessError {
  /** Create an error whose message is the sentence shown to the user. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, EXIT_CODES.ERROR, options);
  }
}

/** OS error numbers (Linux) and what they mean for the user. */
const OS_ERRORS: Record<number, string> = {
  2: "no such file or folder",
  13: "permission denied",
  17: "already exists",
  20: "a path component is a file, not a folder",
  21: "is a folder, not a file",
  28: "no space left on the device",
  30: "the filesystem is read-only",
  36: "a file name is too long for the filesystem",
  40: "too many levels of symbolic links",
  122: "disk quota exceeded",
};

/**
 * One sentence describing `error` when it is an environment problem (a filesystem error from
 * Deno, or an {@linkcode EnvironmentError}); `null` for anything else (a bug).
 *
 * @example
 * ```ts
 * describeEnvironmentError(new Error("File name too long (os error 36): mkdir 'r/x'"));
 * // => "File name too long: mkdir 'r/x'"
 * ```
 */
export function describeEnvironmentError(error: unknown): string | null {
  if (error instanceof EnvironmentError) return error.message;
  if (!(error instanceof Error)) return null;
  const code = osErrorCode(error);
  const known = code !== null ? OS_ERRORS[code] : undefined;
  const isDenoFsError = Object.values(Deno.errors).some((kind) => error instanceof kind);
  if (known === undefined && !isDenoFsError) return null;
  const osMessage = /\(os error \d+\)/.test(error.message);
  const detail = oneLine(error.message.replace(/\s*\(os error \d+\)/, ""));
  return known === undefined || osMessage ? detail : `${known}: ${detail}`;
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

/** The `(os error N)` number in a Deno error message, else `null`. */
function osErrorCode(error: Error): number | null {
  const match = /\(os error (\d+)\)/.exec(error.message);
  if (match) return Number(match[1]);
  const code = (error as { code?: unknown }).code;
  const named: Record<string, number> = {
    ENOENT: 2,
    EACCES: 13,
    EEXIST: 17,
    ENOTDIR: 20,
    EISDIR: 21,
    ENOSPC: 28,
    EROFS: 30,
    ENAMETOOLONG: 36,
    ELOOP: 40,
    EDQUOT: 122,
  };
  return typeof code === "string" && code in named ? named[code] : null;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, " ").trim();
}
