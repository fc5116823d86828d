/**
 * Pre-flight check of the results folder, before any phase runs: it must be (or become) a
 * writable folder and leave room for the longest path a run writes. A problem is an environment
 * error (ERROR, exit 3) told in one sentence, never a stack trace mid-run.
 *
 * @module
 */

import { join, resolve } from "node:path";
import { describeEnvironmentError } from "../../types/mod.ts";

/** Longest path (bytes) Linux accepts. */
const PATH_MAX_BYTES = 4096;

/**
 * Room kept for what a run adds under `<results>/<experiment>/<run-id>/phases/<phase>/`: the
 * run id, the harness's own file names and the trainer's checkpoint folders.
 */
const RUN_PATH_ALLOWANCE_BYTES = 512;

/**
 * `null` when `resultsDir` is a writable folder (created when missing) whose paths leave room for
 * `longestName` (the longest experiment or phase name); else one sentence saying what is wrong.
 *
 * @example
 * ```ts
 * const problem = await checkResultsFolder("results", ["quickstart"]);
 * if (problem) console.error(`parity run: ERROR: ${problem}`);
 * ```
 */
export async function checkResultsFolder(
  resultsDir: string,
  names: readonly string[] = [],
): Promise<string | null> {
  const dir = resolve(resultsDir);
  try {
    const info = await Deno.stat(dir);
    if (!info.isDirectory) return `the results folder ${dir} is not a folder`;
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) {
      return `the results folder ${dir} cannot be used: ${describe(error)}`;
    }
    try {
      await Deno.mkdir(dir, { recursive: true });
    } catch (mkdirError) {
      return `the results folder ${dir} cannot be created: ${describe(mkdirError)}`;
    }
  }
  const probe = join(dir, `.parity-write-probe-${Deno.pid}`);
  try {
    await Deno.writeTextFile(probe, "probe\n");
  } catch (error) {
    return `the results folder ${dir} is not writable: ${describe(error)}`;
  } finally {
    await Deno.remove(probe).catch(() => {});
  }
  const encoder = new TextEncoder();
  const longest = Math.max(0, ...names.map((name) => encoder.encode(name).length));
  const bytes = encoder.encode(dir).length + 2 * longest + RUN_PATH_ALLOWANCE_BYTES;
  if (bytes > PATH_MAX_BYTES) {
    return `paths under the results folder ${dir} would exceed ${PATH_MAX_BYTES} bytes; ` +
      `use a shorter results folder or shorter names`;
  }
  return null;
}

function describe(error: unknown): string {
  return describeEnvironmentError(error) ??
    (error instanceof Error ? error.message : String(error));
}
