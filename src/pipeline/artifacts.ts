/**
 * The artifact each phase must leave behind, checked after it exits 0: the split's checkpoint
 * tag folder with its completion marker, the universal folder, the plan file.
 *
 * @module
 */

import type { PhaseSpec } from "../types/phase_spec.ts";
import { join } from "node:path";
import { pathExists } from "./run_store.ts";

/** Checks the artifact a phase must leave behind; returns a message when it is missing. */
export async function missingArtifact(spec: PhaseSpec): Promise<string | null> {
  const { paths } = spec;
  if (spec.role === "split") {
    const tag = paths.checkpointTag!;
    if (!(await pathExists(tag))) {
      const latest = await Deno.readTextFile(join(paths.checkpointDir!, "latest"))
        .then((text) => text.trim(), () => "");
      const hint = latest && join(paths.checkpointDir!, latest) !== tag
        ? ` (its latest file names ${JSON.stringify(latest)}: set trainer.checkpoint_tag)`
        : "";
      return `missing artifact: checkpoint ${tag} was not written${hint}`;
    }
    const marker = spec.checkpointMarker;
    if (marker && !(await pathExists(join(tag, marker)))) {
      return `incomplete checkpoint: ${tag} has no completion marker ${marker}`;
    }
  }
  if (spec.role === "convert" && !(await pathExists(paths.universal!))) {
    return `missing artifact: universal checkpoint ${paths.universal} was not written`;
  }
  if (spec.role === "plan" && !(await pathExists(paths.planOut!))) {
    return `missing artifact: plan ${paths.planOut} was not written`;
  }
  if (spec.role === "execute" && !(await pathExists(paths.stateFile!))) {
    return `missing artifact: the executed plan's process state ${paths.stateFile} was not written`;
  }
  return null;
}

/** `outputs` of a phase's phase.json: where its artifacts are. */
export function phaseOutputs(spec: PhaseSpec): Record<string, string | undefined> {
  const { paths } = spec;
  return {
    dir: paths.dir,
    metrics: paths.metricsFile,
    checkpoint_dir: spec.role === "split" ? paths.checkpointDir : undefined,
    checkpoint_tag: paths.checkpointTag,
    checkpoint_marker: spec.checkpointMarker,
    universal: paths.universal,
    plan: paths.planOut,
    state: paths.stateFile,
  };
}

/**
 * The checkpoint folders a completed phase's `checkpoint_hashes` cover, from its `outputs`: the
 * split's checkpoint folder, the converter's universal folder, none for other roles.
 */
export function checkpointRoots(
  role: PhaseSpec["role"],
  outputs: Record<string, string | undefined>,
): string[] {
  const root = role === "split"
    ? outputs.checkpoint_dir
    : role === "convert"
    ? outputs.universal
    : undefined;
  return root ? [root] : [];
}
