/**
 * Disk hygiene for the results folder: what `deno task parity gc [results-dir] [--dry-run]
 * [--experiment NAME]` does, and the `keep_checkpoints: last|none` policies. Only checkpoint folders are
 * ever deleted — the split phase's `checkpoints/` and the convert phase's
 * `global_step<N>_universal/` (also inside `attempt-<n>/` folders of retried phases, and any other
 * folder a phase.json declares in `outputs.checkpoint_dir` / `outputs.universal` inside its own
 * phase folder). Metrics, logs, plans, phase.json contents and summaries are never removed.
 *
 * Which checkpoints are still needed (`keep: "last"`, the default):
 * - every checkpoint of the run that `<experiment>/latest` names;
 * - every checkpoint of a run the latest run reuses: a phase.json of the latest run names it in
 *   `source_run` or points into it from `outputs` (followed transitively; a reference is matched by
 *   run id as well as by path, so a results folder that was moved keeps its links);
 * - every run newer than `latest`: an unfinished or crashed run whose completed phases a resume will
 *   reuse. For the same reason an experiment without `latest` is left alone.
 *
 * Before a checkpoint is deleted its phase.json is rewritten atomically with
 * `"artifacts_pruned": true`, so the phase cache never reuses a producer whose checkpoint is gone;
 * marking first means a crash in between leaves a marked phase with its files, never the reverse.
 * Paths are resolved and checked to stay inside the results folder; a path that goes through a
 * symlink, or a symlink pointing outside, is refused and reported, never followed. `collectGarbage`
 * takes each experiment's run lock, so it never prunes a run in progress.
 *
 * @module
 */

import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";
import { acquireRunLock, LockHeldError, type RunLock } from "./lock.ts";
import { ATTEMPT_DIR_PATTERN } from "./run_store.ts";
import { experimentFolderName, listRuns, writeJsonAtomic } from "./run_store.ts";
import { bytes as formatBytes } from "../../format/mod.ts";
import { EXIT_CODES, HarnessError, isUniversalFolder } from "../../types/mod.ts";

/** Which checkpoints survive a collection. */
export type KeepPolicy = "last" | "none";

/** Options of {@linkcode collectGarbage}. */
export interface GcOptions {
  /** List what would be deleted without deleting or rewriting anything. */
  dryRun?: boolean;
  /** Only this experiment (its name as in the experiment file). */
  experiment?: string;
  /** `last` (default): keep the latest run and what it reuses; `none`: delete every checkpoint. */
  keep?: KeepPolicy;
  /** Take each experiment's run lock and skip experiments with a run in progress. Default true. */
  lock?: boolean;
}

/** A checkpoint folder that was (or, in a dry run, would be) deleted. */
export interface PrunedFolder {
  /** Absolute path of the folder (or symlink). */
  path: string;
  /** Experiment folder name. */
  experiment: string;
  /** Run id. */
  run: string;
  /** Phase name (for an `attempt-<n>` folder, the phase it belongs to). */
  phase: string;
  /** `checkpoints` (split), `universal` (convert) or `declared` (named by phase.json outputs). */
  kind: "checkpoints" | "universal" | "declared";
  /** Bytes the folder occupies (each hard-linked file counted once); 0 for a symlink. */
  bytes: number;
  /** True once deleted; false in a dry run. */
  deleted: boolean;
}

/** A path gc would not touch, and why. */
export interface RefusedPath {
  /** The path as found. */
  path: string;
  /** Why it was left alone. */
  reason: string;
}

/** What gc decided for one experiment. */
export interface GcExperimentReport {
  /** Experiment folder name. */
  experiment: string;
  /** Absolute experiment folder. */
  dir: string;
  /** Run id `latest` names, null when there is none. */
  latest: string | null;
  /** Run ids whose checkpoints were kept. */
  keptRuns: string[];
  /** Why the experiment was skipped entirely (run in progress, no `latest`), if it was. */
  skipped?: string;
}

/** Outcome of a collection or a prune. */
export interface GcReport {
  /** The folder that was collected (the results folder, experiment or run folder). */
  root: string;
  /** Nothing was deleted or rewritten. */
  dryRun: boolean;
  /** Per-experiment decisions (empty for {@linkcode pruneRunCheckpoints}). */
  experiments: GcExperimentReport[];
  /** Checkpoint folders deleted (or that would be), with their sizes. */
  folders: PrunedFolder[];
  /** Paths left alone for safety. */
  refused: RefusedPath[];
  /** Sum of `folders[].bytes`. */
  bytesFreed: number;
}

/** Names a phase folder holds that are never checkpoints, whatever phase.json says. */
const PROTECTED_NAMES = new Set([
  "phase.json",
  "metrics.jsonl",
  "stdout.log",
  "stderr.log",
  "plan.json",
  "target.json",
]);
const RUN_ID_PATTERN = /^\d{8}T\d{6}Z-[0-9a-z]+$/;

/**
 * Deletes checkpoint folders that no cached phase still needs, in every experiment of
 * `resultsDir` (or only `options.experiment`). See the module doc for what counts as needed.
 * Each experiment is collected under its run lock; one with a live run is skipped and reported.
 *
 * @throws {Deno.errors.NotFound} when `resultsDir` does not exist.
 * @throws {HarnessError} (exit 2) when `options.experiment` has no folder in it.
 */
export async function collectGarbage(
  resultsDir: string,
  options: GcOptions = {},
): Promise<GcReport> {
  const root = await Deno.realPath(resultsDir);
  const report = emptyReport(root, options.dryRun ?? false);
  let experimentDirs: string[];
  if (options.experiment !== undefined) {
    const dir = join(root, experimentFolderName(options.experiment));
    const info = await lstatOrUndefined(dir);
    if (!info?.isDirectory) {
      throw new HarnessError(
        `no experiment ${JSON.stringify(options.experiment)} in ${resultsDir}` +
          (info?.isSymlink ? " (it is a symlink; gc does not follow symlinks)" : ""),
        EXIT_CODES.USAGE,
      );
    }
    experimentDirs = [dir];
  } else {
    experimentDirs = [];
    for await (const entry of Deno.readDir(root)) {
      const dir = join(root, entry.name);
      if (entry.isSymlink) {
        report.refused.push({ path: dir, reason: "a symlink; gc does not follow symlinks" });
      } else if (entry.isDirectory && (await listRuns(dir)).length > 0) {
        experimentDirs.push(dir);
      }
    }
    experimentDirs.sort();
  }

  for (const dir of experimentDirs) {
    let lock: RunLock | undefined;
    if ((options.lock ?? true) && !report.dryRun) {
      try {
        lock = await acquireRunLock(dir);
      } catch (e) {
        if (!(e instanceof LockHeldError)) throw e;
        report.experiments.push({
          experiment: basename(dir),
          dir,
          latest: null,
          keptRuns: [],
          skipped: `a run is in progress (PID ${e.holder.pid}, started ${e.holder.started_at})`,
        });
        continue;
      }
    }
    try {
      await collectExperiment(root, dir, options.keep ?? "last", report);
    } finally {
      await lock?.release();
    }
  }
  return report;
}

/**
 * `keep_checkpoints: none`: deletes every checkpoint folder of one run (its own folders only; a
 * symlink to another run's checkpoint is removed, not followed) and marks each owning phase.json
 * `artifacts_pruned`. Call it after the run has finished, while still holding the run lock.
 */
export async function pruneRunCheckpoints(
  runDir: string,
  options: { dryRun?: boolean } = {},
): Promise<GcReport> {
  const run = await Deno.realPath(runDir);
  const report = emptyReport(run, options.dryRun ?? false);
  await pruneRun(run, basename(dirname(run)), run, report);
  return report;
}

/**
 * `keep_checkpoints: last`: deletes the checkpoints of every run of an experiment except the
 * latest, the runs it reuses and runs newer than it (see the module doc). Does not take the run
 * lock: the caller (the runner, at the end of its run) already holds it.
 */
export async function pruneOlderRuns(
  experimentDir: string,
  options: { dryRun?: boolean } = {},
): Promise<GcReport> {
  const dir = await Deno.realPath(experimentDir);
  const report = emptyReport(dir, options.dryRun ?? false);
  await collectExperiment(dir, dir, "last", report);
  return report;
}

/** Human-readable report: one line per folder with its size, kept runs, refusals and the total. */
export function formatGcReport(report: GcReport): string {
  const lines: string[] = [];
  const verb = report.dryRun ? "would free" : "freed";
  const shown = (p: string) => {
    const rel = relative(Deno.cwd(), p);
    return rel === "" || rel === ".." || rel.startsWith("../") ? p : rel;
  };
  for (const e of report.experiments) {
    if (e.skipped) {
      lines.push(`${e.experiment}: skipped, ${e.skipped}`);
    } else {
      lines.push(
        `${e.experiment}: latest ${e.latest ?? "(none)"}; keeping ${
          e.keptRuns.length === 0 ? "no run" : e.keptRuns.join(", ")
        }`,
      );
    }
  }
  for (const f of report.folders) {
    lines.push(`  ${verb} ${formatBytes(f.bytes).padStart(10)}  ${shown(f.path)}`);
  }
  for (const r of report.refused) lines.push(`  refused ${shown(r.path)}: ${r.reason}`);
  const total = `${formatBytes(report.bytesFreed)} in ${report.folders.length} folder${
    report.folders.length === 1 ? "" : "s"
  }`;
  lines.push(
    report.dryRun ? `dry run: would free ${total}; nothing was deleted` : `freed ${total}`,
  );
  return lines.join("\n");
}

function emptyReport(root: string, dryRun: boolean): GcReport {
  return { root, dryRun, experiments: [], folders: [], refused: [], bytesFreed: 0 };
}

/** Collects one experiment folder (already resolved, inside `root`). */
async function collectExperiment(
  root: string,
  dir: string,
  keep: KeepPolicy,
  report: GcReport,
): Promise<void> {
  const experiment = basename(dir);
  const runs = await listRuns(dir);
  const runIds = runs.map((r) => basename(r));
  const latest = await latestRunId(dir, runIds, report);
  const entry: GcExperimentReport = { experiment, dir, latest, keptRuns: [] };
  report.experiments.push(entry);
  if (keep === "last" && latest === null) {
    entry.skipped = "no valid 'latest' run, so nothing is known to be unused";
    entry.keptRuns = runIds;
    return;
  }
  const needed = keep === "none" ? new Set<string>() : await neededRuns(dir, runIds, latest!);
  entry.keptRuns = runIds.filter((id) => needed.has(id));
  for (const id of runIds) {
    if (!needed.has(id)) await pruneRun(root, experiment, join(dir, id), report);
  }
}

/** The run id `latest` names, when it is a run of this experiment (refusing anything else). */
async function latestRunId(
  dir: string,
  runIds: string[],
  report: GcReport,
): Promise<string | null> {
  const link = join(dir, "latest");
  let target: string;
  try {
    target = await Deno.readLink(link);
  } catch {
    return null;
  }
  const id = basename(resolve(dir, target));
  if (resolve(dir, target) !== join(dir, id) || !runIds.includes(id)) {
    report.refused.push({ path: link, reason: `names ${target}, not a run of this experiment` });
    return null;
  }
  return id;
}

/** Runs whose checkpoints must stay: latest, newer runs, and everything they reference. */
async function neededRuns(dir: string, runIds: string[], latest: string): Promise<Set<string>> {
  const known = new Set(runIds);
  const needed = new Set<string>();
  const queue = runIds.filter((id) => id >= latest);
  while (queue.length > 0) {
    const id = queue.pop()!;
    if (needed.has(id)) continue;
    needed.add(id);
    for (const ref of await referencedRunIds(join(dir, id), known)) {
      if (!needed.has(ref)) queue.push(ref);
    }
  }
  return needed;
}

/** Run ids that the phase.json files of a run point at (`source_run`, `outputs.*`). */
async function referencedRunIds(runDir: string, known: Set<string>): Promise<Set<string>> {
  const refs = new Set<string>();
  for (const phaseDir of await phaseDirs(runDir)) {
    const phase = await readPhaseJson(join(phaseDir, "phase.json"));
    if (!phase) continue;
    const paths: unknown[] = [phase.source_run];
    if (typeof phase.outputs === "object" && phase.outputs !== null) {
      paths.push(...Object.values(phase.outputs as Record<string, unknown>));
    }
    for (const p of paths) {
      if (typeof p !== "string" || p === "") continue;
      // Match by run-id segment, so references survive moving the results folder.
      for (const segment of resolve(runDir, p).split("/")) {
        if (RUN_ID_PATTERN.test(segment) && known.has(segment)) refs.add(segment);
      }
    }
  }
  return refs;
}

/** Phase folders of a run (real folders only; a symlinked phase belongs to another run). */
async function phaseDirs(runDir: string): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const entry of Deno.readDir(join(runDir, "phases"))) {
      if (entry.isDirectory) out.push(join(runDir, "phases", entry.name));
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return out.sort();
}

async function readPhaseJson(path: string): Promise<Record<string, unknown> | undefined> {
  try {
    const value = JSON.parse(await Deno.readTextFile(path));
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value : undefined;
  } catch {
    return undefined; // missing or unreadable: nothing to learn, nothing to mark
  }
}

interface Candidate {
  path: string;
  kind: PrunedFolder["kind"];
  /** Folder whose phase.json owns the checkpoint (the phase folder or its attempt folder). */
  owner: string;
  phase: string;
}

/** Deletes (or lists) every checkpoint folder of one run. */
async function pruneRun(root: string, experiment: string, runDir: string, report: GcReport) {
  const run = basename(runDir);
  const candidates: Candidate[] = [];
  for (const phaseDir of await phaseDirs(runDir)) {
    const phase = basename(phaseDir);
    const owners = [phaseDir];
    for await (const entry of Deno.readDir(phaseDir)) {
      if (entry.isDirectory && ATTEMPT_DIR_PATTERN.test(entry.name)) {
        owners.push(join(phaseDir, entry.name));
      }
    }
    for (const owner of owners) candidates.push(...(await checkpointCandidates(owner, phase)));
  }
  const byOwner = new Map<string, Candidate[]>();
  for (const c of candidates) {
    const refusal = await refusalReason(root, c.path);
    if (refusal) {
      report.refused.push({ path: c.path, reason: refusal });
      continue;
    }
    byOwner.set(c.owner, [...(byOwner.get(c.owner) ?? []), c]);
  }
  for (const [owner, list] of byOwner) {
    const sized = await Promise.all(list.map(async (c) => ({ c, bytes: await diskUsage(c.path) })));
    if (!report.dryRun) {
      await markPruned(owner, list.map((c) => relative(owner, c.path)));
      for (const { c } of sized) {
        const info = await Deno.lstat(c.path);
        await Deno.remove(c.path, { recursive: !info.isSymlink });
      }
    }
    for (const { c, bytes } of sized) {
      report.folders.push({
        path: c.path,
        experiment,
        run,
        phase: c.phase,
        kind: c.kind,
        bytes,
        deleted: !report.dryRun,
      });
      report.bytesFreed += bytes;
    }
  }
}

/** Checkpoint folders directly owned by a phase (or attempt) folder. */
async function checkpointCandidates(owner: string, phase: string): Promise<Candidate[]> {
  const found = new Map<string, Candidate["kind"]>();
  for await (const entry of Deno.readDir(owner)) {
    if (!(entry.isDirectory || entry.isSymlink)) continue;
    if (entry.name === "checkpoints") found.set(join(owner, entry.name), "checkpoints");
    else if (isUniversalFolder(entry.name)) found.set(join(owner, entry.name), "universal");
  }
  // Declared outputs count only when they lie strictly inside this phase's own folder: a resume
  // phase declares the split's checkpoint folder (or the whole convert folder) as its input.
  const phaseJson = await readPhaseJson(join(owner, "phase.json"));
  const outputs = phaseJson?.outputs as Record<string, unknown> | undefined;
  for (const key of ["checkpoint_dir", "universal"]) {
    const p = outputs?.[key];
    if (typeof p !== "string" || p === "") continue;
    const abs = resolve(owner, p);
    if (!strictlyInside(owner, abs) || found.has(abs) || PROTECTED_NAMES.has(basename(abs))) {
      continue;
    }
    // Declared outputs may be recorded with the pre-move absolute path; only existing folders count.
    const info = await lstatOrUndefined(abs);
    if (info && (info.isDirectory || info.isSymlink)) found.set(abs, "declared");
  }
  return [...found].map(([path, kind]) => ({ path, kind, owner, phase }));
}

/** Why a path must not be deleted, or undefined when it is safe to. */
async function refusalReason(root: string, path: string): Promise<string | undefined> {
  if (!strictlyInside(root, path)) return "outside the results folder";
  // Every folder above it must be a real folder: a symlink on the way could lead anywhere.
  if ((await Deno.realPath(dirname(path))) !== dirname(path)) {
    return "its parent folder is reached through a symlink";
  }
  const info = await Deno.lstat(path);
  if (info.isSymlink) {
    const target = resolve(dirname(path), await Deno.readLink(path));
    let real: string;
    try {
      real = await Deno.realPath(target);
    } catch {
      real = target; // dangling: judge by where it would point
    }
    if (!strictlyInside(root, real)) {
      return `a symlink pointing outside the results folder (${target})`;
    }
  }
  return undefined;
}

/** Rewrites `<owner>/phase.json` with `artifacts_pruned: true` (atomically); no-op without one. */
async function markPruned(owner: string, pruned: string[]): Promise<void> {
  const path = join(owner, "phase.json");
  const phase = await readPhaseJson(path);
  if (!phase) return;
  const before = Array.isArray(phase.pruned) ? phase.pruned.map(String) : [];
  await writeJsonAtomic(path, {
    ...phase,
    artifacts_pruned: true,
    pruned_at: new Date().toISOString(),
    pruned: [...new Set([...before, ...pruned])].sort(),
  });
}

/** Bytes under a path, not following symlinks, each inode counted once. */
async function diskUsage(path: string): Promise<number> {
  const seen = new Set<string>();
  let total = 0;
  const visit = async (p: string) => {
    const info = await Deno.lstat(p);
    if (info.isSymlink) return;
    if (info.isDirectory) {
      for await (const entry of Deno.readDir(p)) await visit(join(p, entry.name));
      return;
    }
    const id = `${info.dev}:${info.ino}`;
    if (info.ino !== null && seen.has(id)) return;
    seen.add(id);
    total += info.size;
  };
  await visit(path);
  return total;
}

function strictlyInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel !== "" && rel !== ".." && !rel.startsWith("../") && !isAbsolute(rel);
}

async function lstatOrUndefined(path: string): Promise<Deno.FileInfo | undefined> {
  try {
    return await Deno.lstat(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}
