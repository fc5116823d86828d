/**
 * Integrity check of a finished run folder before `parity report` re-renders it: every phase
 * whose `phase.json` recorded content hashes must still have those exact outputs, or the reports
 * would show a verdict its artifacts no longer support.
 *
 * @module
 */

import { join } from "node:path";
import { checkpointProblem, type PhaseRecord } from "./cache.ts";
import type { CheckpointVerifyMode } from "./checkpoint_hashes.ts";
import { sha256Hex } from "./sha256.ts";
import { outputsChanged } from "./output_hashes.ts";
import { readSummary } from "../../types/mod.ts";

/**
 * Problems of `runDir`, one sentence each (empty when the artifacts match what was recorded).
 * Phases without recorded hashes (runs made before hashes existed) are not checked; checkpoints
 * are checked as `verify` says (a pruned one is not checked: the run's verdict never read it).
 */
export async function runArtifactProblems(
  runDir: string,
  verify: CheckpointVerifyMode = "auto",
): Promise<string[]> {
  const problems: string[] = [...await summaryShapeProblems(runDir)];
  const resolved = await resolvedExperimentProblem(runDir);
  if (resolved !== null) problems.push(resolved);
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
    if (record.checkpoint_hashes === undefined) continue;
    const damaged = await checkpointProblem(phaseDir, record, verify);
    if (damaged !== null) problems.push(`phase ${entry.name}: ${damaged}`);
  }
  return problems;
}

/** summary.json fields the reports read, each of the right kind (a missing file is left to the loader). */
async function summaryShapeProblems(runDir: string): Promise<string[]> {
  const file = join(runDir, "summary.json");
  let summary: Record<string, unknown> | undefined;
  try {
    summary = await readSummary(runDir) as Record<string, unknown> | undefined;
  } catch (error) {
    return [(error as Error).message];
  }
  if (summary === undefined) return [];
  const problems: string[] = [];
  for (const field of ["phases", "comparisons", "diagnostics"]) {
    if (!Array.isArray(summary[field])) problems.push(`${file}: "${field}" is not a list`);
  }
  if (!["PASS", "FAIL", "ERROR", "ABSTAIN"].includes(summary.verdict as string)) {
    problems.push(`${file}: "verdict" is not PASS, FAIL, ERROR or ABSTAIN`);
  }
  return problems;
}

/** experiment.resolved.yaml must still hash to what manifest.json recorded for it. */
async function resolvedExperimentProblem(runDir: string): Promise<string | null> {
  let recorded: unknown;
  try {
    const manifest = JSON.parse(await Deno.readTextFile(join(runDir, "manifest.json")));
    recorded = manifest?.input_hashes?.["experiment.resolved.yaml"];
  } catch {
    return null; // hand-made or older run folders have no manifest to check against
  }
  if (typeof recorded !== "string") return null;
  const file = join(runDir, "experiment.resolved.yaml");
  try {
    if ((await sha256Hex(await Deno.readFile(file))) === recorded) return null;
  } catch {
    return `${file} is missing`;
  }
  return `${file} changed since the run (its hash differs from manifest.json)`;
}
