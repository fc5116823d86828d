/**
 * Content hashes of what a completed phase produced, recorded in its `phase.json` as
 * `output_hashes` and checked before the phase is reused (README "Caching") or a run folder is
 * re-rendered: a metrics or plan file edited, truncated or swapped after completion — or a
 * `phase.json` whose outputs were pointed elsewhere — is never trusted.
 *
 * @module
 */

import { isAbsolute, join, relative, resolve, sep as SEP } from "node:path";
import { sha256Hex } from "./sha256.ts";

/** `phase-folder-relative path → sha256` of a phase's judged outputs. */
export type OutputHashes = Record<string, string>;

/** The output fields of a phase.json hashed here (checkpoints: checkpoint_hashes.ts). */
export interface HashedOutputs {
  /** Metrics file or folder. */
  metrics?: string;
  /**
   * The judged metrics source when it is not `metrics` (`trainer.metrics.path`: a TensorBoard
   * folder, a csv_monitor folder, a log), so such a phase is reused only while it is unchanged.
   */
  metrics_source?: string;
  /** Plan file of a plan phase. */
  plan?: string;
  /** Per-process expert state (`process_state.json`) of a trainer or plan-execute phase. */
  state?: string;
}

/**
 * Hashes the metrics (file and judged source), plan and process-state outputs that lie inside `phaseDir` (files, or every file of a
 * folder); missing ones are left out.
 */
export async function hashPhaseOutputs(
  phaseDir: string,
  outputs: HashedOutputs,
): Promise<OutputHashes> {
  const hashes: OutputHashes = {};
  for (const path of [outputs.metrics, outputs.metrics_source, outputs.plan, outputs.state]) {
    if (path === undefined) continue;
    const rel = insideRelative(phaseDir, path);
    if (rel !== null) await hashInto(phaseDir, rel, hashes);
  }
  return hashes;
}

/**
 * `null` when the recorded hashes of a completed phase still match the files in `phaseDir` (its
 * own folder) and its recorded outputs lie in that folder and are the ones hashed; else why not,
 * in a few words.
 */
export async function outputsChanged(
  phaseDir: string,
  outputs: HashedOutputs | undefined,
  recorded: OutputHashes | undefined,
): Promise<string | null> {
  if (recorded === undefined) return "its phase.json records no content hashes";
  for (const path of [outputs?.metrics, outputs?.metrics_source, outputs?.plan, outputs?.state]) {
    if (path === undefined) continue;
    const rel = insideRelative(phaseDir, path);
    if (rel === null) return `its phase.json names an output outside its folder: ${path}`;
    if (!Object.keys(recorded).some((key) => key === rel || key.startsWith(`${rel}/`))) {
      if (await exists(join(phaseDir, rel))) return `${rel} was not hashed at completion`;
    }
  }
  const now: OutputHashes = {};
  for (const rel of Object.keys(recorded)) {
    if (insideRelative(phaseDir, join(phaseDir, rel)) === null) {
      return `its phase.json hashes a file outside its folder: ${rel}`;
    }
    try {
      now[rel] = await sha256Hex(await Deno.readFile(join(phaseDir, rel)));
    } catch {
      return `${rel} is missing`;
    }
    if (now[rel] !== recorded[rel]) return `${rel} changed since the phase completed`;
  }
  return null;
}

/** The note printed when an earlier phase is not reused, saying why. */
export function notReused(phase: string, runDir: string, reason: string): string {
  const run = runDir.split("/").at(-1) ?? runDir;
  return `${phase}: not reusing the result of run ${run}: ${reason}; running it again`;
}

async function hashInto(root: string, rel: string, into: OutputHashes): Promise<void> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(join(root, rel));
  } catch {
    return;
  }
  if (info.isFile) {
    into[rel] = await sha256Hex(await Deno.readFile(join(root, rel)));
  } else if (info.isDirectory) {
    const names = (await Array.fromAsync(Deno.readDir(join(root, rel)))).map((e) => e.name).sort();
    for (const name of names) await hashInto(root, `${rel}/${name}`, into);
  }
}

function insideRelative(root: string, path: string): string | null {
  const rel = relative(resolve(root), resolve(root, path));
  if (rel === "" || rel === ".." || rel.startsWith(`..${SEP}`) || isAbsolute(rel)) return null;
  return rel;
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}
