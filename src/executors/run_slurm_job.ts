/**
 * Runs one phase as a Slurm batch job, supervised like a local child: submit (or attach to a job
 * an earlier harness submitted), follow its state with `scontrol show job` every `poll` seconds,
 * stream the job's output files into the phase logs, stop it with `scancel` on the phase timeout
 * or an interruption, and come back with a plain result (never an exception for job problems).
 *
 * The job is registered with the process supervision as a live child, so SIGINT/SIGTERM (and
 * `shutdown()`) cancel it and wait until it has left the queue, and `Deno.exit` cancels it
 * synchronously. A job Slurm requeues (node failure, preemption) keeps its id and is simply
 * followed further: it is never submitted twice.
 *
 * @module
 */

import { join } from "node:path";
import {
  type ChildStatus,
  fileTail,
  interruption,
  isSecretName,
  registerLiveChild,
} from "../process/mod.ts";
import type { SlurmExecutorSpec } from "../types/mod.ts";
import {
  cancelJob,
  cancelJobNow,
  type JobRecord,
  parseSbatchOutput,
  queryJob,
  sbatchArgv,
  slurmClient,
  unhealthyNodes,
} from "./slurm_cli.ts";
import type { ExecutionResult, SlurmJobDetails } from "./executor.ts";
import { batchScript } from "./slurm_script.ts";
import { baseState, isActiveState, isInfraState, jobOutcome } from "./slurm_states.ts";

/** Files the executor keeps in a phase folder. */
export const SLURM_FILES = {
  /** The batch script. */
  script: "slurm_job.sh",
  /** What Slurm writes the job's stdout to (streamed into stdout.log). */
  out: "slurm.out",
  /** What Slurm writes the job's stderr to (streamed into stderr.log). */
  err: "slurm.err",
  /** The command's exit code, written by the script when the command ends. */
  exit: "slurm_exit_code",
  /** The job id and what the phase will leave, written right after the submission. */
  record: "slurm_job.json",
} as const;

/** What to run and how. */
export interface SlurmJobOptions {
  /** Phase name (job name `parity-<phase>`). */
  phase: string;
  /** Program and arguments (never passed through a shell: see slurm_script.ts). */
  argv: readonly string[];
  /** Variables set on top of the harness's environment. */
  env: Readonly<Record<string, string>>;
  /** Working folder. */
  cwd: string;
  /** Slurm settings. */
  slurm: SlurmExecutorSpec;
  /** Seconds the job may run (counted from when it starts running), then `scancel`. */
  timeoutS: number;
  /** Phase folder: script, Slurm's output files and the exit-code file go here. */
  dir: string;
  /** Phase logs the job's output files are appended to. */
  stdoutPath: string;
  /** Phase logs the job's output files are appended to. */
  stderrPath: string;
  /** Follow this job (submitted by an earlier harness) instead of submitting one. */
  attach?: string;
  /** Called with the job id right after the submission (record it before anything else). */
  onSubmit?: (jobId: string) => void | Promise<void>;
  /** Called with one line when Slurm requeues the job (node failure, preemption, requeue). */
  onRequeue?: (message: string) => void;
}

/** How the job ended: the executors' one result, with the job as last seen (id null when the submission failed). */
export type SlurmJobResult = ExecutionResult & { signal: null; slurm: SlurmJobDetails };

/** Consecutive failed state queries before the job is given up as lost. */
const MAX_UNREACHABLE = 30;

/** Longest wait for a cancelled job to leave the queue. */
const CANCEL_WAIT_MS = 60_000;

/** Submits (or attaches to) the job and follows it to its end; see the module documentation. */
export async function runSlurmJob(options: SlurmJobOptions): Promise<SlurmJobResult> {
  const started = performance.now();
  const wallS = () => (performance.now() - started) / 1000;
  const pumps = [
    new LogPump(join(options.dir, SLURM_FILES.out), options.stdoutPath),
    new LogPump(join(options.dir, SLURM_FILES.err), options.stderrPath),
  ];
  const job = { id: null as string | null, state: "", reason: "", nodes: "", partition: "" };
  const last: JobRecord = { ...job, state: "", exitCode: null, restarts: 0 };
  const result = async (
    status: ChildStatus,
    message: string,
    infra = false,
    exitCode: number | null = null,
  ): Promise<SlurmJobResult> => {
    for (const pump of pumps) await pump.pump();
    const tail = [await fileTail(options.stdoutPath), await fileTail(options.stderrPath), message]
      .filter((t) => t.length > 0).join("\n");
    return {
      status,
      exitCode,
      signal: null,
      wallS: wallS(),
      message,
      logTail: tail,
      infra,
      slurm: { ...job, restarts: last.restarts },
    };
  };
  if (interruption()) {
    return await result("interrupted", "not submitted: the harness was interrupted");
  }

  await Deno.mkdir(options.dir, { recursive: true });
  if (options.attach) {
    job.id = options.attach;
  } else {
    const submitted = await submitJob(options);
    if ("failure" in submitted) return await result("failed", submitted.failure);
    job.id = submitted.id;
    await options.onSubmit?.(job.id);
  }
  const jobId = job.id;

  // Supervision: an interruption cancels the job; exiting the harness cancels it at once.
  const watch: Watch = { stop: null, wake: () => {} };
  let markDone!: () => void;
  const done = new Promise<void>((resolve) => markDone = resolve);
  const unregister = registerLiveChild({
    pid: -Number(jobId.split("_")[0]),
    argv: ["slurm-job", jobId, ...options.argv],
    startedAt: new Date(),
    interrupt: () => {
      watch.stop ??= "interrupted";
      watch.wake();
    },
    killNow: () => cancelJobNow(jobId),
    done,
  });
  try {
    return await followJob(jobId, options, { pumps, job, last, watch, result });
  } finally {
    unregister();
    markDone();
  }
}

/** How the harness stops following a job: why (null: it does not), and how to wake its wait. */
interface Watch {
  stop: "interrupted" | "timeout" | null;
  wake: () => void;
}

/** What {@link followJob} shares with {@link runSlurmJob}. */
interface Following {
  pumps: LogPump[];
  /** What the result reports of the job, updated as it is polled. */
  job: { id: string | null; state: string; reason: string; nodes: string; partition: string };
  /** The last record polled. */
  last: JobRecord;
  watch: Watch;
  result: (
    status: ChildStatus,
    message: string,
    infra?: boolean,
    exitCode?: number | null,
  ) => Promise<SlurmJobResult>;
}

/**
 * Polls the job until it ends, the controller stops answering, it runs past its time or the
 * harness is interrupted (then it is cancelled and followed until it leaves the queue).
 */
async function followJob(
  jobId: string,
  options: SlurmJobOptions,
  { pumps, job, last, watch, result }: Following,
): Promise<SlurmJobResult> {
  let runningSince: number | null = null;
  let unreachable = 0;
  let cancelledAt: number | null = null;
  let failedSince: number | null = null;
  for (;;) {
    if (interruption() && watch.stop === null) watch.stop = "interrupted";
    const record = await queryJob(jobId);
    for (const pump of pumps) await pump.pump();
    if (record === "unreachable") {
      if (++unreachable >= MAX_UNREACHABLE) {
        await cancelJob(jobId);
        return await result("failed", `Slurm job ${jobId}: the controller stopped answering`);
      }
    } else if (record === "unknown") {
      // Forgotten by the controller (MinJobAge): the exit-code file says how it ended.
      const code = await readExitCode(options.dir);
      if (watch.stop !== null) break;
      if (code === null) {
        return await result("failed", `Slurm job ${jobId} is gone and left no exit code`);
      }
      const outcome = jobOutcome(jobId, code === 0 ? "COMPLETED" : "FAILED", { exitCode: code });
      return await result(outcome.status, outcome.message, false, code);
    } else {
      unreachable = 0;
      if (record.restarts > last.restarts) {
        options.onRequeue?.(await requeueNotice(jobId, record, job.nodes));
      }
      Object.assign(last, record);
      Object.assign(job, {
        state: record.state,
        reason: record.reason,
        nodes: record.nodes || job.nodes,
        partition: record.partition,
      });
      if (!isActiveState(record.state)) {
        if (watch.stop !== null) break;
        // A running job that Slurm requeues (preemption, node failure, scontrol requeue) can
        // show its killed attempt as FAILED before it is PENDING again: a failure counts only
        // once it has stayed ended for FAILURE_CONFIRM_MS.
        if (baseState(record.state) !== "COMPLETED") {
          failedSince ??= performance.now();
          if (performance.now() - failedSince < FAILURE_CONFIRM_MS) {
            await new Promise((resolve) => setTimeout(resolve, options.slurm.pollS * 1000));
            continue;
          }
        }
        const ended = await endedJob(jobId, record, job.nodes, options.dir);
        return await result(ended.status, ended.message, ended.infra, ended.code);
      }
      failedSince = null;
      if (baseState(record.state) === "RUNNING") runningSince ??= performance.now();
      else if (baseState(record.state) === "PENDING") runningSince = null; // requeued
    }
    if (
      watch.stop === null && runningSince !== null &&
      performance.now() - runningSince > options.timeoutS * 1000
    ) {
      watch.stop = "timeout";
    }
    if (watch.stop !== null) {
      if (cancelledAt === null) {
        cancelledAt = performance.now();
        await cancelJob(jobId);
      } else if (performance.now() - cancelledAt > CANCEL_WAIT_MS) {
        break;
      }
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, watch.stop !== null ? 250 : options.slurm.pollS * 1000);
      watch.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
  if (watch.stop === "timeout") {
    return await result(
      "timeout",
      `timed out after ${options.timeoutS} s of running: Slurm job ${jobId} cancelled`,
    );
  }
  return await result(
    "interrupted",
    `Slurm job ${jobId} cancelled: the harness was interrupted (${
      interruption()?.reason ?? "shutdown"
    })`,
  );
}

/** Writes the batch script and submits it: the job id, or why sbatch failed. */
async function submitJob(options: SlurmJobOptions): Promise<{ id: string } | { failure: string }> {
  await Deno.remove(join(options.dir, SLURM_FILES.exit)).catch(() => {});
  // Secret-looking variables never reach the script on disk: sbatch gets them in its own
  // environment and --export=ALL hands them to the job.
  const plain: Record<string, string> = {};
  const secret: Record<string, string> = {};
  for (const [k, v] of Object.entries(options.env)) (isSecretName(k) ? secret : plain)[k] = v;
  const script = join(options.dir, SLURM_FILES.script);
  await Deno.writeTextFile(
    script,
    batchScript({
      phase: options.phase,
      argv: options.argv,
      env: plain,
      cwd: options.cwd,
      exitFile: join(options.dir, SLURM_FILES.exit),
      srun: options.slurm.srun,
      nodes: options.slurm.nodes,
    }),
    { mode: 0o755 },
  );
  const out = await slurmClient(
    sbatchArgv(options.slurm, {
      jobName: `parity-${options.phase}`,
      script,
      stdoutPath: join(options.dir, SLURM_FILES.out),
      stderrPath: join(options.dir, SLURM_FILES.err),
      cwd: options.cwd,
      timeoutS: options.timeoutS,
    }),
    secret,
  );
  if (!out.ok) return { failure: `sbatch failed: ${out.stderr.trim()}` };
  try {
    return { id: parseSbatchOutput(out.stdout) };
  } catch (e) {
    return { failure: e instanceof Error ? e.message : String(e) };
  }
}

/** How a job that left the active states ended, with its exit code. */
async function endedJob(jobId: string, record: JobRecord, nodes: string, dir: string) {
  // A job killed with its node never finished its command: Slurm's `ExitCode=0:0` then
  // says nothing, so only the script's own exit-code file counts.
  const code = (await readExitCode(dir)) ?? (isInfraState(record.state) ? null : record.exitCode);
  const outcome = jobOutcome(jobId, record.state, { reason: record.reason, nodes, exitCode: code });
  // A node failure says which node and why (`node2 DOWN+NOT_RESPONDING: Not responding`).
  const down = outcome.infra ? await unhealthyNodes(nodes) : "";
  const message = down ? `${outcome.message}; ${down}` : outcome.message;
  return { status: outcome.status, message, infra: outcome.infra, code };
}

/** The line that tells the console a job was requeued, and where it ran. */
async function requeueNotice(jobId: string, record: JobRecord, nodes: string): Promise<string> {
  const where = nodes ? ` after running on ${nodes}` : "";
  const why = record.reason && record.reason !== "None" ? ` (${record.reason})` : "";
  const down = await unhealthyNodes(nodes);
  return `Slurm job ${jobId} requeued${where} (restart ${record.restarts}): now ` +
    `${baseState(record.state)}${why}${down ? `; ${down}` : ""}`;
}

/** How long a job must stay FAILED (or another ended state) before the harness believes it. */
const FAILURE_CONFIRM_MS = 3000;

async function readExitCode(dir: string): Promise<number | null> {
  try {
    const text = (await Deno.readTextFile(join(dir, SLURM_FILES.exit))).trim();
    return /^\d+$/.test(text) ? Number(text) : null;
  } catch {
    return null;
  }
}

/** Appends what Slurm has added to a job output file since the last call to a phase log. */
class LogPump {
  #offset = 0;
  constructor(readonly from: string, readonly to: string) {}

  async pump(): Promise<void> {
    let file: Deno.FsFile;
    try {
      file = await Deno.open(this.from, { read: true });
    } catch {
      return; // not created yet
    }
    try {
      await file.seek(this.#offset, Deno.SeekMode.Start);
      const out = await Deno.open(this.to, { create: true, append: true });
      try {
        const buffer = new Uint8Array(64 * 1024);
        for (;;) {
          const n = await file.read(buffer);
          if (n === null || n === 0) break;
          for (let at = 0; at < n;) at += await out.write(buffer.subarray(at, n));
          this.#offset += n;
        }
      } finally {
        out.close();
      }
    } finally {
      file.close();
    }
  }
}
