/**
 * A finished run folder read back as what is needed to replay it: the experiment from
 * `experiment.resolved.yaml`, the manifest (base folder, environment facts), the summary and
 * the plan the run executed (`plan.json`). Nothing else is consulted, so a run folder copied to
 * another machine can be replayed there.
 *
 * @module
 */

import { dirname, join } from "node:path";
import {
  type Experiment,
  formatValidationErrors,
  loadExperimentText,
  resolvePlan,
  validateExperiment,
} from "../experiment/mod.ts";
import {
  placePlan,
  PLAN_FILE,
  readSummary,
  type ResolvedPlan,
  type RunSummary,
  UsageError,
} from "../types/mod.ts";
import type { Manifest } from "../pipeline/store/mod.ts";

/** A run folder that cannot be replayed (bad path, missing or invalid files): exit code 2. */
export class StoredRunError extends UsageError {}

/** What a run folder holds. */
export interface StoredRun {
  /** The run folder (symlinks such as `latest` resolved). */
  runDir: string;
  /** `<results>`: the run folder's grandparent. */
  resultsDir: string;
  /** The experiment as it was resolved (defaults, `--set` and matrix applied). */
  experiment: Experiment;
  /** Its text, as stored. */
  resolvedYaml: string;
  /** The manifest. */
  manifest: Manifest;
  /** The summary, when the run finished. */
  summary?: RunSummary;
  /** Folder relative paths resolve against. */
  baseDir: string;
}

async function readText(path: string): Promise<string> {
  try {
    return await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new StoredRunError(`${path}: missing (is this a run folder?)`);
    }
    throw e;
  }
}

/** Reads a run folder; throws {@link StoredRunError} when it cannot be replayed. */
export async function readStoredRun(path: string): Promise<StoredRun> {
  let runDir: string;
  try {
    runDir = await Deno.realPath(path);
  } catch {
    throw new StoredRunError(`${path}: no such run folder`);
  }
  const resolvedYaml = await readText(join(runDir, "experiment.resolved.yaml"));
  const manifest = JSON.parse(await readText(join(runDir, "manifest.json"))) as Manifest;
  const raw = loadExperimentText(resolvedYaml, "experiment.resolved.yaml");
  // A matrix member's name carries its `[k=v]` suffix, which the name rule rejects: validate
  // under its base name and put the full name back.
  const name = String(raw.name ?? "");
  const validated = validateExperiment({ ...raw, name: name.replace(/\[.*$/, "") || "x" });
  if (!validated.ok) {
    throw new StoredRunError(
      formatValidationErrors(join(runDir, "experiment.resolved.yaml"), validated.errors).join("\n"),
    );
  }
  const experiment = { ...validated.experiments[0], name };
  // An interrupted harness may have left none, or half of one.
  const summary = await readSummary(runDir).catch(() => undefined);
  const baseDir = manifest.base_dir ??
    (manifest.experiment_file ? dirname(manifest.experiment_file) : Deno.cwd());
  return {
    runDir,
    resultsDir: dirname(dirname(runDir)),
    experiment,
    resolvedYaml,
    manifest,
    summary,
    baseDir,
  };
}

/**
 * The plan a stored run executed, placed in its run folder: its `plan.json`, or for a run folder
 * from before plan.json (an older harness) the stored experiment resolved once, as it ran then.
 */
export async function readStoredPlan(
  stored: Pick<StoredRun, "runDir" | "experiment" | "baseDir">,
  harnessEnv: Record<string, string>,
): Promise<ResolvedPlan> {
  const path = join(stored.runDir, PLAN_FILE);
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    return resolvePlan(stored.experiment, {
      runDir: stored.runDir,
      baseDir: stored.baseDir,
      harnessEnv,
    });
  }
  let plan: ResolvedPlan;
  try {
    plan = JSON.parse(text);
  } catch {
    throw new StoredRunError(`${path}: not readable JSON`);
  }
  if (typeof plan?.runDir !== "string" || !Array.isArray(plan.phases)) {
    throw new StoredRunError(`${path}: not a resolved plan (runDir and phases expected)`);
  }
  return placePlan(plan, stored.runDir);
}
