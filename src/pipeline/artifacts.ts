/**
 * Where each phase's artifacts live in a run folder and how the harness checks them: the
 * checkpoint tag the split wrote, the universal folder, the plan file, the completion marker.
 *
 * @module
 */

import { join } from "node:path";
import type { Experiment } from "../experiment/schema.ts";
import type { PhasePaths } from "./commands.ts";
import type { PhaseNode } from "./phases.ts";
import { pathExists } from "./run_store.ts";

/** The checkpoint tag folder the split wrote: `<dir>/<latest>` or `<dir>/global_step<N>`. */
export async function splitTagFolder(checkpointDir: string, saveAt: number): Promise<string> {
  try {
    const tag = (await Deno.readTextFile(join(checkpointDir, "latest"))).trim();
    if (tag && !tag.includes("/") && tag !== "..") return join(checkpointDir, tag);
  } catch { /* fall back to the DeepSpeed default tag */ }
  return join(checkpointDir, `global_step${saveAt}`);
}

/** Target topology document handed to a planner (`${target}`). */
export function targetDocument(node: PhaseNode): Record<string, unknown> {
  const { fault: _fault, ...rest } = node.args;
  return rest;
}

/**
 * The paths of a phase in `runDir`; `pathsOf` gives those of the phases it consumes (which may
 * live in an earlier run when they were reused from the cache).
 */
export async function phasePaths(
  exp: Experiment,
  node: PhaseNode,
  pathsOf: (phase: string) => PhasePaths | undefined,
  runDir: string,
): Promise<PhasePaths> {
  const dir = join(runDir, "phases", node.name);
  const paths: PhasePaths = { dir, metricsFile: join(dir, "metrics.jsonl") };
  const split = pathsOf("split");
  const tag = split?.checkpointDir
    ? await splitTagFolder(split.checkpointDir, exp.schedule.save_at)
    : undefined;
  if (node.role === "split") paths.checkpointDir = join(dir, "checkpoints");
  if (node.role === "convert") {
    paths.native = tag;
    paths.universal = join(dir, `global_step${exp.schedule.save_at}_universal`);
  }
  if (node.role === "plan") {
    paths.native = tag;
    paths.target = join(dir, "target.json");
    paths.planOut = join(dir, "plan.json");
  }
  if (node.role === "resume") {
    if (node.resumeKind === "universal") {
      const convert = pathsOf("convert");
      paths.resumeFrom = convert?.universal;
      paths.checkpointDir = convert?.dir;
    } else {
      paths.resumeFrom = tag;
      paths.checkpointDir = split?.checkpointDir;
      if (node.resumeKind === "plan") {
        paths.plan = pathsOf(`plan-${node.policy}`)?.planOut;
      }
    }
  }
  return paths;
}

/** The file that proves a split's save completed (the reference trainer writes its own). */
export function checkpointMarker(node: PhaseNode): string | undefined {
  return node.entry.checkpoint_marker ??
    (node.entry.preset === "reference" ? "checkpoint_complete.json" : undefined);
}

/** Checks the artifact a phase must leave behind; returns a message when it is missing. */
export async function missingArtifact(
  node: PhaseNode,
  paths: PhasePaths,
  saveAt: number,
): Promise<string | null> {
  if (node.role === "split") {
    const tag = await splitTagFolder(paths.checkpointDir!, saveAt);
    if (!(await pathExists(tag))) return `missing artifact: checkpoint ${tag} was not written`;
    const marker = checkpointMarker(node);
    if (marker && !(await pathExists(join(tag, marker)))) {
      return `incomplete checkpoint: ${tag} has no completion marker ${marker}`;
    }
  }
  if (node.role === "convert" && !(await pathExists(paths.universal!))) {
    return `missing artifact: universal checkpoint ${paths.universal} was not written`;
  }
  if (node.role === "plan" && !(await pathExists(paths.planOut!))) {
    return `missing artifact: plan ${paths.planOut} was not written`;
  }
  return null;
}
