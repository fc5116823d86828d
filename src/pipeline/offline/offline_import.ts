/**
 * `parity run <file> --import BUNDLE`: a bundle that `tools/offline_phases.py` ran elsewhere
 * becomes an earlier run of the experiment, so the normal pipeline judges it without launching
 * anything. Its phase folders are copied into `<results>/<experiment>/<run-id>/phases/` and each
 * gets the `phase.json` the runner writes at completion — status, exit code and times from
 * `offline_result.json`, output and checkpoint hashes computed here by the runner's own
 * functions, the cache key checked equal to the one this harness computes for the same plan.
 * A checkpoint the target wrote but that did not come back (size limits) is recorded as
 * `artifacts_pruned`, as `gc` records a deleted one: its consumers, run offline, are reused; the
 * metrics and digests still judge.
 *
 * @module
 */

import { join } from "node:path";
import { phaseLogs } from "../../executors/mod.ts";
import { bytes } from "../../format/mod.ts";
import { fileTail } from "../../process/mod.ts";
import {
  type Diagnostic,
  type PhaseSpec,
  type PhaseStatus,
  placePlan,
  type ResolvedPlan,
  UsageError,
} from "../../types/mod.ts";
import {
  assertInside,
  checkpointRoots,
  completedOutputs,
  computeKeys,
  newRunId,
  pathExists,
  phaseOutputs,
  writeJsonAtomic,
} from "../store/mod.ts";
import {
  type Bundle,
  BUNDLE_FILE,
  BUNDLE_FORMAT,
  OFFLINE_ENVIRONMENT_FILE,
  OFFLINE_RESULT_FILE,
} from "./offline_bundle.ts";

/** What offline_phases.py recorded for one phase. */
interface OfflineResult {
  status: PhaseStatus;
  exit_code: number | null;
  wall_s: number;
  message?: string;
  started_at?: string;
  finished_at?: string;
  argv0?: string;
  cache_key?: string;
  env_missing?: string[];
  artifacts?: Record<string, OfflineArtifact>;
}

/** An artifact a phase had to leave, as the target found it after the phase. */
interface OfflineArtifact {
  path: string;
  present: boolean;
  files: number;
  bytes: number;
  /** Folder-relative path (`""` for a file) → bytes. */
  sizes?: Record<string, number>;
}

/** Options of {@linkcode importBundle}. */
export interface ImportOptions {
  /** The bundle folder, as it came back. */
  bundleDir: string;
  /** `<results>/<experiment>`. */
  experimentDir: string;
  /** Folder the plan's relative code inputs resolve against (the experiment file's). */
  baseDir: string;
  /** Environment of the code inputs' `!commands` (the plan is resolved already). */
  harnessEnv: Record<string, string>;
}

/** What an import did. */
export interface ImportResult {
  /** The run folder the bundle became. */
  runDir: string;
  /** One line each for the console. */
  notes: string[];
  /** Warnings the run's report carries (`checkpoint-not-returned`). */
  warnings: Diagnostic[];
  /** The machine the phases ran on, as the bundle's `offline_environment.json` tells it. */
  ranOn?: OfflineEnvironment;
}

/** Diagnostic code of a checkpoint written offline whose bytes did not come back. */
const CHECKPOINT_NOT_RETURNED = "checkpoint-not-returned";

/** Diagnostic code (info) saying where the imported phases ran. */
const RAN_OFFLINE = "ran-offline";

/** What offline_phases.py found about the target (`offline_environment.json`). */
export interface OfflineEnvironment {
  host?: string;
  python?: string;
  torch?: string | null;
  cuda?: string | null;
  deepspeed?: string | null;
  gpus?: string[];
}

/** Reads a bundle's `bundle.json`; a missing or foreign one is a usage error (exit 2). */
export async function readBundle(bundleDir: string): Promise<Bundle> {
  const path = join(bundleDir, BUNDLE_FILE);
  let bundle: Bundle;
  try {
    bundle = JSON.parse(await Deno.readTextFile(path));
  } catch (e) {
    const why = e instanceof Deno.errors.NotFound ? "no such file" : "not readable JSON";
    throw new UsageError(`--import ${bundleDir}: ${path}: ${why}`);
  }
  if (bundle?.format !== BUNDLE_FORMAT || !Array.isArray(bundle.phases)) {
    throw new UsageError(`--import ${bundleDir}: not an offline bundle of format ${BUNDLE_FORMAT}`);
  }
  return bundle;
}

/**
 * Copies the phases `bundleDir` ran into a new run folder of `resolved` (the run's plan, not yet
 * placed) and writes their completion
 * markers. Refuses (exit 2) a bundle of another experiment or plan: every phase's cache key must
 * be the one this harness computes now, so the run that follows reuses exactly these phases.
 */
export async function importBundle(
  resolved: ResolvedPlan,
  options: ImportOptions,
): Promise<ImportResult> {
  const bundle = await readBundle(options.bundleDir);
  if (bundle.experiment !== resolved.experiment) {
    throw new UsageError(
      `--import ${options.bundleDir}: the bundle is of experiment ${bundle.experiment}, not ${resolved.experiment}`,
    );
  }
  const runDir = join(options.experimentDir, newRunId(new Date(), `import:${options.bundleDir}`));
  assertInside(options.experimentDir, runDir);
  const plan = placePlan(resolved, runDir);
  const keys = await computeKeys(plan.phases, options.baseDir, options.harnessEnv);
  const exported = new Map(bundle.phases.map((p) => [p.name, p]));
  for (const spec of plan.phases) {
    const key = keys.get(spec.name)!;
    const theirs = exported.get(spec.name)?.cache_key;
    if (theirs !== key) {
      throw new UsageError(
        `--import ${options.bundleDir}: phase ${spec.name} ` +
          (theirs === undefined
            ? "is not in the bundle"
            : `has cache key ${theirs} there, ${key} here`) +
          " (another --set, experiment or code): export the bundle again from this plan",
      );
    }
  }
  const notes: string[] = [];
  const warnings: Diagnostic[] = [];
  const counts: Record<string, number> = {};
  for (const spec of plan.phases) {
    const from = join(options.bundleDir, "phases", spec.name);
    const result = await readOfflineResult(from);
    if (!result) continue; // not run there (offline_phases.py --only): judged as not run
    await copyTree(from, spec.paths.dir);
    counts[result.status] = (counts[result.status] ?? 0) + 1;
    const told = await writeCompletion(
      spec,
      keys.get(spec.name)!,
      result,
      options.bundleDir,
      runDir,
    );
    notes.push(...told.notes);
    warnings.push(...told.warnings);
  }
  const ranOn = await whereItRan(options.bundleDir, runDir);
  if (ranOn) warnings.unshift(ranOffline(ranOn));
  const tally = Object.entries(counts).map(([s, n]) => `${n} ${s}`).join(", ") || "no phase ran";
  notes.unshift(`imported the offline bundle ${options.bundleDir} as run ${runDir}: ${tally}`);
  return { runDir, notes, warnings, ranOn };
}

async function readOfflineResult(phaseDir: string): Promise<OfflineResult | undefined> {
  try {
    return JSON.parse(await Deno.readTextFile(join(phaseDir, OFFLINE_RESULT_FILE)));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw new UsageError(`${join(phaseDir, OFFLINE_RESULT_FILE)}: not readable JSON`);
  }
}

/**
 * The machine the phases ran on, from the bundle's `offline_environment.json`, which is kept in
 * the imported run folder; undefined when the bundle has none.
 */
async function whereItRan(
  bundleDir: string,
  runDir: string,
): Promise<OfflineEnvironment | undefined> {
  let facts: OfflineEnvironment;
  try {
    facts = JSON.parse(await Deno.readTextFile(join(bundleDir, OFFLINE_ENVIRONMENT_FILE)));
  } catch {
    return undefined;
  }
  await writeJsonAtomic(join(runDir, OFFLINE_ENVIRONMENT_FILE), facts);
  return facts;
}

/** The info diagnostic naming the machine the phases ran on (the manifest's `ran_offline`). */
function ranOffline(facts: OfflineEnvironment): Diagnostic {
  // Only what the target could tell: a bundle without Python phases probes no interpreter.
  const known = [
    facts.python && `python ${facts.python}`,
    facts.torch !== undefined && `torch ${facts.torch ?? "none"}`,
    facts.cuda !== undefined && `CUDA ${facts.cuda ?? "none"}`,
    facts.deepspeed !== undefined && `DeepSpeed ${facts.deepspeed ?? "none"}`,
    facts.gpus !== undefined &&
    (facts.gpus.length
      ? `${facts.gpus.length} GPU(s): ${[...new Set(facts.gpus)].join(", ")}`
      : "no GPU"),
  ].filter(Boolean);
  return {
    level: "info",
    code: RAN_OFFLINE,
    message: `the phases ran offline on ${facts.host ?? "an unnamed host"}` +
      (known.length ? ` (${known.join(", ")})` : "") + "; the manifest's `environment` " +
      "describes the machine that judged them, its `ran_offline` the one that ran them",
  };
}

/** The phase.json of an imported phase, as launchPhase writes it; notes on what did not come back. */
async function writeCompletion(
  spec: PhaseSpec,
  key: string,
  result: OfflineResult,
  bundleDir: string,
  runDir: string,
): Promise<{ notes: string[]; warnings: Diagnostic[] }> {
  const { paths } = spec;
  const notes: string[] = [];
  const warnings: Diagnostic[] = [];
  const outputs = phaseOutputs(spec);
  const status = result.status;
  // A checkpoint the target left but that did not travel back: judged without it, never re-run.
  const missing: string[] = [];
  for (const [name, artifact] of Object.entries(result.artifacts ?? {})) {
    if (!artifact.present) continue; // never written: the phase failed there, said so
    const back = await cameBack(artifact.path.replaceAll("<run>", runDir), artifact.sizes);
    if (back === null) continue;
    missing.push(name);
    if (name.endsWith("_marker")) continue; // its folder's warning says it
    warnings.push({
      level: "warning",
      code: CHECKPOINT_NOT_RETURNED,
      phase: spec.name,
      message: `${spec.name}: its ${name} (${artifact.files} files, ` +
        `${bytes(artifact.bytes)}) was written offline but ${back}: the phases that read ` +
        "it ran offline and are judged from their metrics and digests; its bytes are not hashed " +
        "here",
    });
  }
  const roots = status === "ok" && missing.length === 0 ? checkpointRoots(spec.role, outputs) : [];
  if (result.env_missing?.length) {
    notes.push(`${spec.name}: ran offline without ${result.env_missing.join(", ")} set`);
  }
  const failed = status !== "ok" && status !== "skipped";
  await writeJsonAtomic(join(paths.dir, "phase.json"), {
    name: spec.name,
    role: spec.role,
    status,
    cached: false,
    wall_s: result.wall_s,
    exit_code: result.exit_code,
    consumes: spec.consumes,
    cache_key: key,
    attempts: 1,
    ...(status !== "ok" ? { message: offlineMessage(result) } : {}),
    ...(failed ? { log_tail: await logTail(spec) } : {}),
    signal: null,
    started_at: result.started_at,
    finished_at: result.finished_at,
    ...await completedOutputs(spec, roots),
    ...(missing.length > 0 ? { artifacts_pruned: true } : {}),
    offline: {
      bundle: bundleDir,
      argv0: result.argv0,
      artifacts: result.artifacts,
      not_brought_back: missing,
    },
  });
  return { notes, warnings };
}

/**
 * `null` when `path` came back as the target left it (every file, same sizes), else what
 * happened to it: not brought back, or brought back incomplete.
 */
async function cameBack(path: string, sizes: Record<string, number> | undefined): Promise<
  string | null
> {
  if (!(await pathExists(path))) return "not brought back";
  if (sizes === undefined) return null;
  const here: Record<string, number> = {};
  const walk = async (rel: string): Promise<void> => {
    const full = rel === "" ? path : join(path, rel);
    const info = await Deno.stat(full);
    if (!info.isDirectory) {
      here[rel] = info.size;
      return;
    }
    for await (const e of Deno.readDir(full)) await walk(rel === "" ? e.name : join(rel, e.name));
  };
  await walk("");
  const expected = Object.entries(sizes);
  const same = expected.filter(([rel, size]) => here[rel] === size).length;
  return same === expected.length
    ? null
    : `brought back incomplete (${same} of ${expected.length} files as written)`;
}

function offlineMessage(result: OfflineResult): string {
  return `ran offline: ${result.message ?? result.status}`;
}

/** Last lines of the phase's stdout, then its stderr (the error is usually there). */
async function logTail(spec: PhaseSpec): Promise<string> {
  const { stdoutPath, stderrPath } = phaseLogs(spec);
  const tails = [await fileTail(stdoutPath), await fileTail(stderrPath)];
  return tails.filter((t) => t.length > 0).join("\n");
}

/** Copies a folder (files, folders, links as links); the bundle stays as it came back. */
async function copyTree(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(from)) {
    const src = join(from, entry.name);
    const dst = join(to, entry.name);
    if (entry.isDirectory) await copyTree(src, dst);
    else if (entry.isSymlink) await Deno.symlink(await Deno.readLink(src), dst);
    else await Deno.copyFile(src, dst);
  }
}
