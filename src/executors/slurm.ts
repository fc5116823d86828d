/**
 * The Slurm executor (docs/slurm.md): a phase as one batch job (`run_slurm_job.ts`), its id and
 * the pipeline's launch record written to `slurm_job.json` right after the submission, so that a
 * later harness can attach to a job this one did not see end, or cancel it.
 *
 * @module
 */

import { join } from "node:path";
import type { PhaseSpec, SlurmExecutorSpec } from "../types/mod.ts";
import type {
  EarlierLaunch,
  ExecutionContext,
  Executor,
  ExecutorRegistration,
} from "./executor.ts";
import { phaseLogs } from "./executor.ts";
import { runSlurmJob, SLURM_FILES, type SlurmJobOptions } from "./run_slurm_job.ts";
import { cancelJob, queryJob } from "./slurm_cli.ts";
import { isActiveState } from "./slurm_states.ts";

/** The Slurm executor for a phase's settings. */
export function slurmExecutor(settings: SlurmExecutorSpec): Executor {
  return {
    run: (phase, ctx) =>
      runSlurmJob({
        ...jobOptions(settings, phase, ctx),
        onSubmit: async (jobId) => {
          await ctx.writeJson(join(phase.paths.dir, SLURM_FILES.record), {
            job_id: jobId,
            ...ctx.launchRecord,
            submitted_at: new Date().toISOString(),
          });
          ctx.note(`${phase.name}: submitted Slurm job ${jobId}`);
          ctx.started();
        },
      }),
    reattach: {
      find: findLaunch,
      attach: (phase, launch, ctx) =>
        runSlurmJob({ ...jobOptions(settings, phase, ctx), attach: launch.handle }),
      cancel: async (launch) => {
        const job = await queryJob(launch.handle);
        if (typeof job !== "object" || !isActiveState(job.state)) return false;
        await cancelJob(launch.handle);
        return true;
      },
    },
  };
}

/** The Slurm executor's registration (`registry.ts`): its jobs outlive the harness. */
export const SLURM_EXECUTOR: ExecutorRegistration<SlurmExecutorSpec> = {
  create: slurmExecutor,
  launchRecordFile: SLURM_FILES.record,
};

/** What every Slurm job of a phase runs and where its files go. */
function jobOptions(
  settings: SlurmExecutorSpec,
  phase: PhaseSpec,
  ctx: ExecutionContext,
): SlurmJobOptions {
  return {
    phase: phase.name,
    argv: phase.argv,
    env: phase.env,
    cwd: phase.cwd,
    slurm: settings,
    timeoutS: phase.timeoutS,
    dir: phase.paths.dir,
    ...phaseLogs(phase),
    onRequeue: (message) => ctx.note(`${phase.name}: ${message}`),
  };
}

/** The job recorded in `dir/slurm_job.json`; undefined when there is none or it is unreadable. */
async function findLaunch(dir: string): Promise<EarlierLaunch | undefined> {
  let file: unknown;
  try {
    file = JSON.parse(await Deno.readTextFile(join(dir, SLURM_FILES.record)));
  } catch {
    return undefined;
  }
  if (typeof file !== "object" || file === null || !("job_id" in file)) return undefined;
  const { job_id, ...record } = file as Record<string, unknown>;
  return { handle: String(job_id), record };
}
