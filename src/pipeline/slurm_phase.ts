/**
 * The pipeline's side of the Slurm executor (docs/slurm.md): one attempt of a phase as a batch
 * job, its record in the phase folder and the manifest, the retry of node failures and
 * preemptions, and re-attaching to jobs an earlier harness submitted and did not see end.
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
import { cancelJob, queryJob, schedulerVersion } from "../executors/slurm_cli.ts";
import { runSlurmJob, SLURM_FILES, type SlurmJobResult } from "../executors/run_slurm_job.ts";
import { isActiveState } from "../executors/slurm_states.ts";
import type { PhaseSpec } from "../types/phase_spec.ts";
import type { ClusterRecord } from "./manifest.ts";
import type { RetryDecision, RetryPolicy } from "./retry.ts";
import type { PhaseContext, PhaseState } from "./phase_execution.ts";
import {
  listRuns,
  pathExists,
  readJsonIfExists,
  writeJsonAtomic,
  writeJsonInTurn,
} from "./run_store.ts";
import { hashPhaseOutputs } from "./output_hashes.ts";
import { checkpointRoots, phaseOutputs } from "./artifacts.ts";
import { hashCheckpoints } from "./checkpoint_hashes.ts";

/** What `slurm_job.json` holds. */
export interface SlurmJobFile {
  /** The job. */
  job_id: string;
  /** Phase name. */
  phase: string;
  /** Its role. */
  role: PhaseSpec["role"];
  /** Its cache key: only a run with the same key attaches to the job. */
  cache_key: string;
  /** Phases it consumed. */
  consumes: string[];
  /** When it was submitted. */
  submitted_at: string;
  /** The `outputs` its phase.json will carry. */
  outputs: Record<string, string | undefined>;
}

/** One attempt of a Slurm phase in its own folder: submit, record the job id, follow it. */
export async function runSlurmAttempt(
  state: PhaseState,
  ctx: PhaseContext,
): Promise<SlurmJobResult> {
  const { spec } = state;
  const dir = spec.paths.dir;
  const result = await runSlurmJob({
    ...jobOptions(spec),
    onSubmit: async (jobId) => {
      const record: SlurmJobFile = {
        job_id: jobId,
        phase: spec.name,
        role: spec.role,
        cache_key: state.key,
        consumes: spec.consumes,
        submitted_at: new Date().toISOString(),
        outputs: phaseOutputs(spec),
      };
      await writeJsonAtomic(join(dir, SLURM_FILES.record), record);
      ctx.progress.note(`${spec.name}: submitted Slurm job ${jobId}`);
    },
    onRequeue: (message) => ctx.progress.note(`${spec.name}: ${message}`),
  });
  await recordCluster(ctx, spec.name, result);
  return result;
}

/** The phase.json entry of a Slurm attempt. */
export function slurmSummary(result: SlurmJobResult): Record<string, unknown> {
  return { slurm: { ...result.job, infra: result.infra } };
}

/**
 * Node failure and preemption are flaky infrastructure: with a `retry` policy they are retried
 * while attempts remain, whatever the log says. Undefined for every other outcome (the policy's
 * log regexes decide then).
 */
export function infraRetry(
  retry: RetryPolicy | undefined,
  attempt: number,
  result: object,
): RetryDecision | undefined {
  if (!("infra" in result) || !result.infra || !retry || attempt >= retry.attempts) {
    return undefined;
  }
  const state = (result as SlurmJobResult).job.state || "node failure";
  return { retry: true, matched: `Slurm ${state}`, match: state };
}

async function recordCluster(ctx: PhaseContext, phase: string, result: SlurmJobResult) {
  if (!result.job.id) return;
  const record: ClusterRecord = {
    scheduler: await schedulerVersion(),
    job_id: result.job.id,
    partition: result.job.partition,
    nodes: result.job.nodes,
    state: result.job.state,
    restarts: result.job.restarts,
  };
  (ctx.manifest.clusters ??= {})[phase] = record;
  await writeJsonInTurn(ctx.manifestPath, ctx.manifest);
}

/**
 * Before a Slurm phase is submitted: completes the same phase of an earlier run whose harness
 * died while its job was queued or running (see the module documentation). Returns whether it
 * attached; the caller's cache lookup then finds the completed phase.
 */
export async function attachEarlierJob(state: PhaseState, ctx: PhaseContext): Promise<boolean> {
  // --force: the phase runs again, so a job an earlier harness left is cancelled, not followed.
  const { spec } = state;
  const runs = (await listRuns(ctx.experimentDir)).reverse();
  for (const runDir of runs) {
    if (runDir === ctx.runDir) continue;
    const dir = join(runDir, "phases", spec.name);
    if (await pathExists(join(dir, "phase.json"))) continue;
    let record: SlurmJobFile | undefined;
    try {
      record = await readJsonIfExists<SlurmJobFile>(join(dir, SLURM_FILES.record));
    } catch {
      continue;
    }
    if (!record) continue;
    const where = relative(ctx.experimentDir, dir);
    if (record.cache_key !== state.key || state.forced) {
      const job = await queryJob(record.job_id);
      if (typeof job === "object" && isActiveState(job.state)) {
        await cancelJob(record.job_id);
        const why = state.forced ? "the phase is forced" : "its inputs changed";
        ctx.progress.note(`cancelled Slurm job ${record.job_id} of ${where}: ${why}`);
      }
      if (!(await pathExists(`${dir}.incomplete`))) await Deno.rename(dir, `${dir}.incomplete`);
      continue;
    }
    ctx.progress.note(`${spec.name}: attaching to Slurm job ${record.job_id} of ${where}`);
    // The job's output files hold everything: copy them into fresh phase logs.
    for (const log of ["stdout.log", "stderr.log"]) {
      await Deno.remove(join(dir, log)).catch(() => {});
    }
    const follow = spec.tool === "trainer" && record.outputs.metrics
      ? ctx.progress.followMetrics(spec.name, record.outputs.metrics, spec.stopAt)
      : ctx.progress.phaseStart(spec.name);
    const result = await runSlurmJob({
      ...jobOptions(spec),
      attach: record.job_id,
      onRequeue: (message) => ctx.progress.note(`${spec.name}: ${message}`),
    });
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
        plan: record.outputs.plan,
        state: record.outputs.state,
      }),
      ...(checkpointHashes ? { checkpoint_hashes: checkpointHashes } : {}),
    });
    ctx.progress.note(`${spec.name}: Slurm job ${record.job_id} ended: ${result.message}`);
    return true;
  }
  return false;
}

/** What every Slurm job of a phase runs and where its files go. */
function jobOptions(spec: PhaseSpec) {
  const dir = spec.paths.dir;
  return {
    phase: spec.name,
    argv: spec.argv,
    env: spec.env,
    cwd: spec.cwd,
    slurm: spec.executor!,
    timeoutS: spec.timeoutS,
    dir,
    stdoutPath: join(dir, "stdout.log"),
    stderrPath: join(dir, "stderr.log"),
  };
}
