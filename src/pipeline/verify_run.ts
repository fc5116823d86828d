/**
 * Integrity check of a finished run folder before `parity report` re-renders it: every phase
 * whose `phase.json` recorded content hashes must still have those exact outputs, or the reports
 * would show a verdict its artifacts no longer support.
 *
 * @module
 */

import { join } from "node:path";
import type { PhaseRecord } from "./cache.ts";
import { outputsChanged } from "./output_hashes.ts";

/**
 * Problems of `runDir`, one sentence each (empty when the artifacts match what was recorded).
 * Phases without recorded hashes (runs made before hashes existed) are not checked.
 */
export async function runArtifactProblems(runDir: string): Promise<string[]> {
  const problems: string[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(join(runDir, "phases")));
  } catch {
    return problems;
  }
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    if (!entry.isDirectory || entry.name.includes(".")) continue;
    const file = join(runDir, "phases", entry.name, "phase.json");
    let record: PhaseRecord;
    try {
      record = JSON.parse(await Deno.readTextFile(file));
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) continue;
      problems.push(`${file} cannot be read: ${(error as Error).message}`);
      continue;
    }
    if (record.output_hashes === undefined || record.artifacts_pruned) continue;
    const phaseDir = record.outputs?.dir ?? join(runDir, "phases", entry.name);
    const changed = await outputsChanged(phaseDir, record.outputs, record.output_hashes);
    if (changed !== null) problems.push(`phase ${entry.name}: ${changed}`);
  }
  return problems;
}
