/**
 * The artifact each phase must leave behind, checked after it exits 0: the split's checkpoint
 * tag folder with its completion marker, the universal folder, the plan file.
 *
 * @module
 */

import { type PhaseSpec, savesCheckpoint } from "../../types/mod.ts";
import { join } from "node:path";
import { pathExists } from "./run_store.ts";
import { hashPhaseOutputs } from "./output_hashes.ts";
import { hashCheckpoints } from "./checkpoint_hashes.ts";

/**
 * The artifacts a phase must leave behind, by name (`checkpoint`, `checkpoint_marker`,
 * `universal`, `plan`, `state`): the one place a role's required outputs are decided, for the
 * check after a local exit and for an offline bundle's `must_leave`.
 */
export function requiredArtifacts(spec: PhaseSpec): Record<string, string> {
  const { paths } = spec;
  const need: Record<string, string> = {};
  if (savesCheckpoint(spec) && paths.checkpointTag) {
    // Several saves: every earlier tag too, by step; the last keeps the plain names.
    for (const { step, dir } of paths.checkpointTags ?? []) {
      if (dir === paths.checkpointTag) continue;
      need[`checkpoint_step${step}`] = dir;
      if (spec.checkpointMarker) {
        need[`checkpoint_marker_step${step}`] = join(dir, spec.checkpointMarker);
      }
    }
    need.checkpoint = paths.checkpointTag;
    if (spec.checkpointMarker) {
      need.checkpoint_marker = join(paths.checkpointTag, spec.checkpointMarker);
    }
  }
  if (spec.role === "convert" && paths.universal) need.universal = paths.universal;
  if (spec.role === "plan" && paths.planOut) need.plan = paths.planOut;
  if (spec.role === "execute" && paths.stateFile) need.state = paths.stateFile;
  return need;
}

/** Checks the artifacts a phase must leave behind; returns a message when one is missing. */
export async function missingArtifact(spec: PhaseSpec): Promise<string | null> {
  const need = requiredArtifacts(spec);
  const tags = spec.paths.checkpointTags ??
    (need.checkpoint ? [{ step: spec.stopAt, dir: need.checkpoint }] : []);
  for (const { step, dir: tag } of tags) {
    if (!(await pathExists(tag))) {
      const dir = spec.paths.checkpointDir!;
      const latest = await Deno.readTextFile(join(dir, "latest"))
        .then((text) => text.trim(), () => "");
      const hint = latest && tag === need.checkpoint && join(dir, latest) !== tag
        ? ` (its latest file names ${JSON.stringify(latest)}: set trainer.checkpoint_tag)`
        : await foldersHint(dir, step);
      return `missing artifact: checkpoint ${tag} was not written${hint}`;
    }
    if (spec.checkpointMarker && !(await pathExists(join(tag, spec.checkpointMarker)))) {
      return `incomplete checkpoint: ${tag} has no completion marker ${spec.checkpointMarker}`;
    }
  }
  if (need.universal && !(await pathExists(need.universal))) {
    return `missing artifact: universal checkpoint ${need.universal} was not written`;
  }
  if (need.plan && !(await pathExists(need.plan))) {
    return `missing artifact: plan ${need.plan} was not written`;
  }
  if (need.state && !(await pathExists(need.state))) {
    return `missing artifact: the executed plan's process state ${need.state} was not written`;
  }
  return null;
}

/** Folders named in a missing-checkpoint hint before the rest are counted. */
const MAX_FOLDERS_NAMED = 3;

/**
 * ` (the folder holds checkpoint-20: set trainer.checkpoint_tag: "checkpoint-${save_at}")` when
 * the split saved under another tag name (a Hugging Face Trainer's `checkpoint-<N>`), the save
 * step in it written as `${save_at}`; ` (nothing was saved in <dir>)` when it saved nothing there.
 */
async function foldersHint(dir: string, saveAt: number): Promise<string> {
  const folders: string[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) if (entry.isDirectory) folders.push(entry.name);
  } catch {
    return ` (nothing was saved in ${dir}: save to \${output_dir} or \${checkpoint_dir})`;
  }
  if (folders.length === 0) return ` (nothing was saved in ${dir})`;
  folders.sort();
  const step = new RegExp(`(?<![0-9])${saveAt}(?![0-9])`);
  const tagged = folders.find((f) => step.test(f));
  const named = folders.slice(0, MAX_FOLDERS_NAMED).join(", ") +
    (folders.length > MAX_FOLDERS_NAMED ? ` +${folders.length - MAX_FOLDERS_NAMED} more` : "");
  const set = tagged
    ? `: set trainer.checkpoint_tag: ${JSON.stringify(tagged.replace(step, "${save_at}"))}`
    : "";
  return ` (the folder holds ${named}${set})`;
}

/** `outputs` of a phase's phase.json: where its artifacts are. */
export function phaseOutputs(spec: PhaseSpec): Record<string, string | undefined> {
  const { paths } = spec;
  return {
    dir: paths.dir,
    metrics: paths.metricsFile,
    // The source the judge reads, when the trainer's metrics are not the contract's JSONL.
    metrics_source: spec.metrics && spec.metrics.path !== paths.metricsFile
      ? spec.metrics.path
      : undefined,
    checkpoint_dir: savesCheckpoint(spec) ? paths.checkpointDir : undefined,
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
  // The split's, or a fused split's baseline's (the only other phase with a checkpoint tag).
  const root = role === "split" || (role === "baseline" && outputs.checkpoint_tag)
    ? outputs.checkpoint_dir
    : role === "convert"
    ? outputs.universal
    : undefined;
  return root ? [root] : [];
}

/**
 * What a completed phase's `phase.json` records of its command and outputs, with the content
 * hashes a later run checks before reusing it (`roots`: the checkpoint folders to hash; hashed
 * before the record is written, so a kill never leaves a checkpoint recorded without them).
 */
export async function completedOutputs(
  spec: PhaseSpec,
  roots: string[],
) {
  const paths = spec.paths;
  const checkpointHashes = roots.length > 0 ? await hashCheckpoints(paths.dir, roots) : undefined;
  return {
    argv: spec.argv,
    cwd: spec.cwd,
    topology: spec.topology,
    outputs: phaseOutputs(spec),
    output_hashes: await hashPhaseOutputs(paths.dir, {
      metrics: paths.metricsFile,
      metrics_source: spec.metrics?.path,
      plan: paths.planOut,
      state: paths.stateFile,
    }),
    ...(checkpointHashes ? { checkpoint_hashes: checkpointHashes } : {}),
  };
}
