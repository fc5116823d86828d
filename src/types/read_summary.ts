/**
 * The one reader of a run folder's `summary.json`, for the report, the run check and the stored
 * runs that rerun, bisect and goldens start from.
 *
 * @module
 */

import type { RunSummary } from "./summary.ts";

/**
 * The run folder's `summary.json`, parsed; undefined when the folder has none (an interrupted
 * harness may have left none). The fields are not checked here: each reader checks what it reads.
 *
 * @throws {Error} naming the file when it is not valid JSON or not a JSON object.
 */
export async function readSummary(runDir: string): Promise<RunSummary | undefined> {
  const file = `${runDir}/summary.json`;
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`${file} is not valid JSON (${(error as Error).message})`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new Error(`${file} is not a JSON object`);
  }
  return value as RunSummary;
}
