/**
 * The pipeline's side of the executors (src/executors): what it hands one attempt (the launch
 * record, its writer, the console), the Slurm job's record in the manifest and `phase.json`, the
 * retry of node failures and preemptions, and re-attaching to work an earlier harness launched
 * and did not see end (executors with a `reattach`, i.e. Slurm; docs/slurm.md).
 *
 * A phase folder holding `slurm_job.json` but no `phase.json` belongs to a harness that died
 * (SIGKILL, reboot) while its job was queued or running. The next run of the experiment, before
 * it would submit that phase, looks for such a folder with the same cache key: it follows the job
 * (if Slurm still has it) or reads the exit-code file the job script leaves, and then writes the
 * missing `phase.json` there — so the phase is reused from that folder like any cached phase,
 * instead of being submitted again. A folder whose key no longer matches has its job cancelled
 * and is moved aside as `<phase>.incomplete`.
 *
 * @module
 */

import { join, relative } from "node:path";
import {
  type ExecutionContext,
  type ExecutionResult,
  executorFor,
  schedulerVersion,
  type SlurmJobDetails,
} from "../../executors/mod.ts";
import type { PhaseSpec } from "../../types/mod.ts";
import {
  checkpointRoots,
  type ClusterRecord,
  hashCheckpoints,
  hashPhaseOutputs,
  listRuns,
  pathExists,
  phaseOutputs,
  writeJsonAtomic,
  writeJsonInTurn,
} from "../store/mod.ts";
import type { RetryDecision, RetryPolicy } from "./retry.ts";
import type { PhaseContext, PhaseState } from "./phase_state.ts";

/**
 * What the pipeline asks an executor to keep with its launch handle (`slurm_job.json` beside
 * `job_id` and `submitted_at`): enough for a later harness to complete the phase.
 */
export interface LaunchRecord {
  /** Phase name. */
  phase: string;
  /** Its role. */
  role: PhaseSpec["role"];
  /** Its cache key: only a run with the same key attaches to the job. */
  cache_key: string;
  /** Phases it consumed. */
  consumes: string[];
  /** The `outputs` its phase.json will carry. */
  outputs: Record<string, string | undefined>;
}

/** The pipeline's side of an attempt on any executor: launch record, atomic writer, console. */
export function executionContext(
  state: PhaseState,
  ctx: PhaseContext,
  started: () => void,
): ExecutionContext {
  const { spec } = state;
  const launchRecord: LaunchRecord = {
    phase: spec.name,
    role: spec.role,
    cache_key: state.key,
    consumes: spec.consumes,
    outputs: phaseOutputs(spec),
  };
  return {
    launchRecord: { ...launchRecord },
    writeJson: writeJsonAtomic,
    note: (message) => ctx.progress.note(message),
    started,
  };
}

/** The phase.json entry of an attempt that ran as a Slurm job (nothing for other executors). */
export function slurmSummary(result: ExecutionResult): Record<string, unknown> {
  return result.slurm ? { slurm: { ...result.slurm, infra: result.infra } } : {};
}

/**
 * Node failure and preemption are flaky infrastructure: with a `retry` policy they are retried
 * while attempts remain, whatever the log says. Undefined for every other outcome (the policy's
 * log regexes decide then).
 */
export function infraRetry(
  retry: RetryPolicy | undefined,
  attempt: number,
  result: Partial<ExecutionResult>,
): RetryDecision | undefined {
  if (!result.infra || !retry || attempt >= retry.attempts) return undefined;
  const state = result.slurm?.state || "node failure";
  return { retry: true, matched: `Slurm ${state}`, match: state };
}

/** Records the Slurm job of a phase in the manifest (`clusters`), when there is one. */
export async function recordCluster(ctx: PhaseContext, phase: string, result: ExecutionResult) {
  const job: SlurmJobDetails | undefined = result.slurm;
  if (!job?.id) return;
  const record: ClusterRecord = {
    scheduler: await schedulerVersion(),
    job_id: job.id,
    partition: job.partition,
    nodes: job.nodes,
    state: job.state,
    restarts: job.restarts,
  };
  (ctx.manifest.clusters ??= {})[phase] = record;
  await writeJsonInTurn(ctx.manifestPath, ctx.manifest);
}

/**
 * Before a Slurm phase is submitted: completes the same phase of an earlier run whose harness
 * died while its job was queued or running (see the module documentation). Returns whether it
 * attached; the caller's cache lookup then finds the completed phase.
 */
export async function attachEarlierJob(
  state: PhaseState,
  ctx: PhaseContext,
  started: () => void,
): Promise<boolean> {
  // --force: the phase runs again, so a job an earlier harness left is cancelled, not followed.
  const { spec } = state;
  const reattach = executorFor(spec.executor).reattach;
  if (!reattach) return false; // its work died with the harness that launched it
  const runs = (await listRuns(ctx.experimentDir)).reverse();
  for (const runDir of runs) {
    if (runDir === ctx.runDir) continue;
    const dir = join(runDir, "phases", spec.name);
    if (await pathExists(join(dir, "phase.json"))) continue;
    const launch = await reattach.find(dir);
    if (!launch) continue;
    const record = launch.record as unknown as LaunchRecord;
    const where = relative(ctx.experimentDir, dir);
    if (record.cache_key !== state.key || state.forced) {
      if (await reattach.cancel(launch)) {
        const why = state.forced ? "the phase is forced" : "its inputs changed";
        ctx.progress.note(`cancelled Slurm job ${launch.handle} of ${where}: ${why}`);
      }
      if (!(await pathExists(`${dir}.incomplete`))) await Deno.rename(dir, `${dir}.incomplete`);
      continue;
    }
    ctx.progress.note(`${spec.name}: attaching to Slurm job ${launch.handle} of ${where}`);
    // The job's output files hold everything: copy them into fresh phase logs.
    for (const log of ["stdout.log", "stderr.log"]) {
      await Deno.remove(join(dir, log)).catch(() => {});
    }
    const follow = spec.tool === "trainer" && record.outputs.metrics
      ? ctx.progress.followMetrics(spec.name, record.outputs.metrics, spec.stopAt)
      : ctx.progress.phaseStart(spec.name);
    started(); // following the job may take hours: work that waits for launches goes on
    const result = await reattach.attach(spec, launch, executionContext(state, ctx, started));
    await follow.stop();
    await recordCluster(ctx, spec.name, result);
    if (result.status === "interrupted") return false;
    // Hashed as a phase that completed under its own harness is: a reuse verifies them.
    const roots = result.status === "ok" ? checkpointRoots(record.role, record.outputs) : [];
    const checkpointHashes = roots.length > 0 ? await hashCheckpoints(dir, roots) : undefined;
    await writeJsonAtomic(join(dir, "phase.json"), {
      name: spec.name,
      role: spec.role,
      status: result.status === "ok" ? "ok" : result.status,
      cached: false,
      wall_s: Math.round(result.wallS * 1000) / 1000,
      exit_code: result.exitCode,
      consumes: record.consumes,
      cache_key: record.cache_key,
      attempts: 1,
      ...(result.status === "ok" ? {} : { message: result.message, log_tail: result.logTail }),
      ...slurmSummary(result),
      attached_by: ctx.runDir,
      finished_at: new Date().toISOString(),
      outputs: record.outputs,
      // What a later reuse verifies, as for a phase that completed under its own harness.
      output_hashes: await hashPhaseOutputs(dir, {
        metrics: record.outputs.metrics,
        metrics_source: record.outputs.metrics_source,
        plan: record.outputs.plan,
        state: record.outputs.state,
      }),
      ...(checkpointHashes ? { checkpoint_hashes: checkpointHashes } : {}),
    });
    ctx.progress.note(`${spec.name}: Slurm job ${launch.handle} ended: ${result.message}`);
    return true;
  }
  return false;
}
