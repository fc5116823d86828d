/**
 * Lists the split's checkpoint folder after it ran, for the parity engine's
 * `checkpoint-tags-not-requested` warning (tags the experiment did not ask for).
 *
 * @module
 */

import { basename } from "node:path";
import { unrequestedTags } from "../../parity/mod.ts";
import type { Diagnostic, PhaseSpec } from "../../types/mod.ts";

/** The warning for a completed split whose checkpoint folder holds unrequested tags, else none. */
export async function splitTagWarnings(split: PhaseSpec | undefined): Promise<Diagnostic[]> {
  const root = split?.paths.checkpointDir;
  const last = split?.paths.checkpointTag;
  if (split === undefined || root === undefined || last === undefined) return [];
  const requested = (split.paths.checkpointTags ?? [{ step: split.stopAt, dir: last }])
    .map(({ step, dir }) => ({ step, name: basename(dir) }));
  const folders: string[] = [];
  try {
    for await (const entry of Deno.readDir(root)) if (entry.isDirectory) folders.push(entry.name);
  } catch {
    return []; // no folder: the missing checkpoint is the split's own failure
  }
  return unrequestedTags(split.name, folders, requested);
}
