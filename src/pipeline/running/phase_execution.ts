/**
 * One phase of a run: its cache key, reuse of an earlier completed phase, or a supervised launch
 * of its spec with retries, followed by the artifact and plan checks. Writes the phase's
 * `phase.json` last, as its completion marker (README, "Interrupted, crashed and flaky runs").
 *
 * @module
 */

import { basename, dirname, join } from "node:path";
import { type ExecutionResult, executorFor } from "../../executors/mod.ts";
import { readMetrics } from "../../metrics/mod.ts";
import { interruption } from "../../process/mod.ts";
import type { LaunchHooks, PhaseContext, PhaseState } from "./phase_state.ts";
import type { Follower } from "./run_progress.ts";
import { type PhaseStatus, type PhaseSummary, savesCheckpoint } from "../../types/mod.ts";
import {
  ATTEMPT_DIR_PATTERN,
  type CacheHit,
  checkpointRoots,
  CHILD_PID_FILE,
  completedOutputs,
  findCachedPhase,
  findFailedPhase,
  missingArtifact,
  notReused,
  pathExists,
  phaseOutputs,
  recordChild,
  warmCheckpointHasher,
  writeJsonAtomic,
  writeJsonInTurn,
} from "../store/mod.ts";
import { checkPlanFile } from "./plan_check.ts";
import { moveAttemptAside, shouldRetry } from "./retry.ts";
import {
  attachEarlierJob,
  executionContext,
  infraRetry,
  recordCluster,
  slurmSummary,
} from "./slurm_phase.ts";
import { readCheckpointBack } from "./checkpoint_read_back.ts";

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/**
 * Whether every phase consuming `name` will be reused without reading its output: each is
 * cached (and, if itself a producer with pruned artifacts, covered in turn), or is outside an
 * `--only` selection. A forced consumer needs the output.
 */
async function consumersCovered(
  name: string,
  ctx: PhaseContext,
  selected: Set<string>,
): Promise<boolean> {
  for (const state of ctx.states.values()) {
    if (!state.spec.consumes.includes(name)) continue;
    const isSelected = selected.has(state.spec.name);
    if (state.forced && isSelected) return false;
    const hit = await findCachedPhase(
      ctx.earlierRuns,
      state.spec.name,
      state.key,
      ctx.runDir,
      undefined,
      ctx.verifyCheckpoints,
    );
    if (!hit) {
      if (isSelected) return false;
      continue;
    }
    if (hit.artifactsMissing && !(await consumersCovered(state.spec.name, ctx, selected))) {
      return false;
    }
  }
  return true;
}

/**
 * Runs one phase, or reuses an earlier completed one with the same key. `cacheOnly` (a phase
 * outside an `--only` selection) never launches: without a cached result it is skipped.
 */
export async function executePhase(
  state: PhaseState,
  ctx: PhaseContext,
  selected: Set<string>,
  hooks: LaunchHooks,
): Promise<void> {
  const { spec } = state;
  const cacheOnly = !selected.has(spec.name);
  // Work an earlier harness left running (a Slurm job) completes that run's phase: reused below.
  if (!cacheOnly) await attachEarlierJob(state, ctx, hooks.started);
  if (!state.forced || cacheOnly) {
    const hit = await lookUpPhase(state, ctx, ctx.earlierRuns);
    // A producer whose checkpoint was pruned is reused only when no phase will read it.
    if (hit && (!hit.artifactsMissing || (await consumersCovered(spec.name, ctx, selected)))) {
      return await reusePhase(state, ctx, hit);
    }
    // Another experiment of the suite ran the same phase (same key: same inputs, by content).
    const shared = await findSharedPhase(state, ctx);
    if (shared) return await reusePhase(state, ctx, shared, basename(dirname(shared.runDir)));
  }
  if (cacheOnly) {
    const failed = ctx.noLaunch
      ? await findFailedPhase(ctx.earlierRuns, spec.name, state.key, ctx.runDir)
      : undefined;
    if (failed) return await judgeEarlierFailure(state, ctx, failed);
    state.summary = {
      ...baseSummary(state),
      status: "skipped",
      exit_code: null,
      message: ctx.noLaunch
        ? "not launched (--no-launch) and no earlier result to reuse"
        : "not selected (--only) and no earlier result to reuse",
    };
    return;
  }
  await launchPhase(state, ctx, hooks);
}

/**
 * The newest completed phase with `state`'s key in another experiment of the results folder,
 * checked like any cached phase (outputs and checkpoint hashes); one whose checkpoint was pruned
 * is not taken.
 */
async function findSharedPhase(
  state: PhaseState,
  ctx: PhaseContext,
): Promise<CacheHit | undefined> {
  if (ctx.suiteRuns.length === 0) return undefined;
  const hit = await lookUpPhase(state, ctx, ctx.suiteRuns);
  return hit && !hit.artifactsMissing ? hit : undefined;
}

/** The newest completed phase with `state`'s key among `runs`, saying why others were not reused. */
function lookUpPhase(
  state: PhaseState,
  ctx: PhaseContext,
  runs: readonly string[],
): Promise<CacheHit | undefined> {
  const name = state.spec.name;
  return findCachedPhase(
    runs,
    name,
    state.key,
    ctx.runDir,
    (run, reason) => ctx.progress.note(notReused(name, run, reason)),
    ctx.verifyCheckpoints,
  );
}

function baseSummary(state: PhaseState): PhaseSummary {
  return {
    name: state.spec.name,
    role: state.spec.role,
    status: "ok",
    cached: false,
    wall_s: 0,
    exit_code: null,
    consumes: state.spec.consumes,
  };
}

/**
 * Reuses an earlier completed phase: every entry of its folder is linked into this run's phase
 * folder, so the paths the specs were compiled with reach its metrics, logs and checkpoints
 * without copying anything.
 */
async function reusePhase(
  state: PhaseState,
  ctx: PhaseContext,
  hit: CacheHit,
  sharedFrom = hit.record.shared_from,
): Promise<void> {
  const { spec } = state;
  await linkPhaseFolder(hit.phaseDir, spec.paths.dir);
  state.present = true;
  // A phase cached before its trainer named a checkpoint format has no read-back yet.
  if (spec.readBack && !hit.artifactsMissing && !(await pathExists(spec.readBack.out))) {
    await readCheckpointBack(spec);
  }
  let status: PhaseStatus = "ok";
  let message: string | undefined;
  if (spec.role === "plan") {
    state.plan = await checkPlanFile(spec.name, spec.policy!, spec.paths.planOut!);
    if (!state.plan.verified) {
      status = "failed";
      message = `plan rejected by the verifier: ${state.plan.error}`;
    }
  }
  state.summary = {
    ...baseSummary(state),
    status,
    cached: true,
    exit_code: hit.record.exit_code,
    cache_key: state.key,
    source_run: hit.runDir,
    ...(sharedFrom ? { shared_from: sharedFrom } : {}),
    ...(message ? { message } : {}),
    // Where the phase really ran (a reuse of a reuse keeps the first wall): the bill's saving.
    reused_wall_s: hit.record.reused_wall_s ?? hit.record.wall_s,
  };
  await writeJsonAtomic(join(spec.paths.dir, "phase.json"), {
    ...state.summary,
    outputs: { ...hit.record.outputs, dir: hit.phaseDir },
    output_hashes: hit.record.output_hashes,
    checkpoint_hashes: hit.record.checkpoint_hashes,
  });
  ctx.progress.phaseEnd(
    spec.name,
    status,
    0,
    message ??
      `${sharedFrom ? `shared from ${sharedFrom}, run` : "cached from"} ${hit.runDir}${
        hit.artifactsMissing ? " (its pruned output is not needed)" : ""
      }`,
  );
}

/** Links every entry of an earlier phase folder into `dir` (its logs, metrics, checkpoints). */
async function linkPhaseFolder(from: string, dir: string): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  for await (const entry of Deno.readDir(from)) {
    if (entry.name === "phase.json" || entry.name === CHILD_PID_FILE) continue;
    if (ATTEMPT_DIR_PATTERN.test(entry.name)) continue;
    await Deno.symlink(join(from, entry.name), join(dir, entry.name));
  }
}

/**
 * `--no-launch`: a phase that failed in an earlier run with the same key (an imported offline
 * run) is judged as it ended there, with its message and log tail; its logs are linked in.
 */
async function judgeEarlierFailure(
  state: PhaseState,
  ctx: PhaseContext,
  failed: CacheHit,
): Promise<void> {
  const { spec } = state;
  const { record } = failed;
  await linkPhaseFolder(failed.phaseDir, spec.paths.dir);
  state.summary = {
    ...baseSummary(state),
    status: record.status,
    exit_code: record.exit_code,
    cache_key: state.key,
    source_run: failed.runDir,
    message: `${record.message ?? record.status} (run ${failed.runDir}, not launched again)`,
    ...(record.log_tail !== undefined ? { log_tail: record.log_tail } : {}),
  };
  await writeJsonAtomic(join(spec.paths.dir, "phase.json"), {
    ...state.summary,
    reused_wall_s: record.wall_s,
  });
  ctx.progress.phaseEnd(spec.name, record.status, 0, state.summary.message);
}

async function launchPhase(
  state: PhaseState,
  ctx: PhaseContext,
  hooks: LaunchHooks,
): Promise<void> {
  const { spec } = state;
  const { paths } = spec;
  const progress = ctx.progress;
  Deno.mkdirSync(paths.dir, { recursive: true }); // half an async round trip, before the spawn
  state.present = true;
  const startedAt = new Date();
  // Bookkeeping done once the first attempt runs (or, should it not start, right after it), so
  // none of it delays the spawn: the manifest records the child (phase.json waits for that, so
  // no phase completes unrecorded) and the checkpoint hasher compiles for after the child.
  let recorded: Promise<void> | undefined;
  let warm: Promise<void> | null = null;
  const record = () => {
    if (recorded) return;
    recordChild(ctx.manifest, spec.name, spec.argv, spec.env, spec.cwd);
    recorded = writeJsonInTurn(ctx.manifestPath, ctx.manifest);
    recorded.catch(() => {}); // rethrown through state.completion
    warm = savesCheckpoint(spec) || spec.role === "convert" ? warmCheckpointHasher() : null;
  };
  const retries: { attempt: number; matched: string; message: string }[] = [];
  const executor = executorFor(spec.executor);
  let attempt = 1;
  let result: ExecutionResult;
  for (;;) {
    if (spec.target && paths.target) await writeJsonAtomic(paths.target, spec.target);
    let follow: Follower | undefined;
    const started = () => {
      hooks.started();
      record();
      follow ??= spec.tool === "trainer"
        ? progress.followMetrics(spec.name, paths.metricsFile, spec.stopAt)
        : progress.phaseStart(spec.name);
    };
    result = await executor.run(spec, executionContext(state, ctx, started));
    started(); // a no-op unless the attempt never started
    await follow!.stop();
    await recordCluster(ctx, spec.name, result);
    const status = childStatus(result.status);
    const decision = result.status === "interrupted"
      ? { retry: false }
      : infraRetry(spec.retry, attempt, result) ??
        shouldRetry(spec.retry, attempt, status, result.logTail);
    if (!decision.retry) break;
    const aside = await moveAttemptAside(paths.dir, attempt);
    retries.push({ attempt, matched: decision.matched!, message: result.message });
    progress.phaseEnd(
      spec.name,
      status,
      result.wallS,
      `${result.message}; retrying (log matched ${decision.matched}, attempt kept in ${aside})`,
    );
    attempt++;
  }
  const { status, message } = await checkedStatus(state, ctx, hooks, result);
  const outputs = phaseOutputs(spec);
  const roots = status === "ok" ? checkpointRoots(spec.role, outputs) : [];
  const summary: PhaseSummary = {
    ...baseSummary(state),
    status,
    wall_s: round3(result.wallS),
    exit_code: result.exitCode,
    cache_key: state.key,
    attempts: attempt,
    ...(state.devices ? { devices: state.devices } : {}),
    ...(retries.length > 0 ? { retries } : {}),
    ...(status !== "ok" ? { message, log_tail: result.logTail } : {}),
  };
  state.summary = summary;
  const job = slurmSummary(result);
  const signal = result.signal;
  // The phase has finished once its status is known; the hashing time is in checkpoint_hashes.
  const finishedAt = new Date();
  // The status is known, so the phases that consume this one may start: the completion marker
  // is written meanwhile, after the producers' markers and the manifest that records the child.
  state.completion = Promise.all([recorded, ...producerCompletions(state, ctx)]).then(async () => {
    // Hashed before phase.json (the completion marker) is written: a kill meanwhile leaves an
    // incomplete phase, never a checkpoint recorded without its hashes.
    await warm;
    await writeJsonAtomic(join(paths.dir, "phase.json"), {
      ...summary,
      ...job,
      signal,
      started_at: startedAt.toISOString(),
      finished_at: finishedAt.toISOString(),
      ...await completedOutputs(spec, roots),
    });
  });
  state.completion.catch(() => {}); // awaited before the run is published
  if (spec.metrics) {
    const { path, ...reader } = spec.metrics;
    state.metrics = ctx.gate.settled().then(() => readMetrics(path, reader));
    state.metrics.catch(() => {}); // awaited by the judge
  }
  progress.phaseEnd(spec.name, status, summary.wall_s, message);
}

/**
 * The phase's status once its child ended: a missing artifact fails it, and a plan phase's plan
 * is verified (its slot released first, so the next independent phase starts meanwhile).
 */
async function checkedStatus(
  state: PhaseState,
  ctx: PhaseContext,
  hooks: LaunchHooks,
  result: ExecutionResult,
): Promise<{ status: PhaseStatus; message: string }> {
  const { spec } = state;
  const status = childStatus(result.status);
  const message = result.status === "interrupted"
    ? `interrupted by ${interruption()?.reason ?? "a signal"}`
    : result.message;
  if (status !== "ok") return { status, message };
  const missing = await missingArtifact(spec);
  if (missing) return { status: "failed", message: missing };
  if (spec.readBack) {
    // The checkpoint as written, read by a process of its own before anything consumes it.
    const read = await readCheckpointBack(spec);
    ctx.progress.note(
      `${spec.name}: checkpoint files read back in ${read!.wall_s} s${
        read!.unreadable ? ` (unreadable: ${read!.unreadable})` : ""
      }`,
    );
  }
  if (spec.role !== "plan") return { status, message };
  hooks.released();
  await ctx.gate.settled();
  state.plan = await checkPlanFile(spec.name, spec.policy!, spec.paths.planOut!);
  if (!state.plan.verified) {
    return { status: "failed", message: `plan rejected by the verifier: ${state.plan.error}` };
  }
  return { status, message };
}

/** The completion markers still being written by the phases `state` consumes. */
function producerCompletions(state: PhaseState, ctx: PhaseContext): Promise<void>[] {
  return state.spec.consumes.flatMap((name) => {
    const completion = ctx.states.get(name)?.completion;
    return completion ? [completion] : [];
  });
}

function childStatus(status: string): "ok" | "failed" | "timeout" {
  return status === "ok" ? "ok" : status === "timeout" ? "timeout" : "failed";
}
