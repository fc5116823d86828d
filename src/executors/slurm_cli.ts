/**
 * The Slurm client commands the executor uses — `sbatch`, `scontrol show job`, `scancel`,
 * `sinfo -V` — run as argv (never through a shell), with their output parsed. Clients find the
 * cluster the usual way (`SLURM_CONF`, `/etc/slurm/slurm.conf`). Without accounting storage
 * `sacct` knows nothing, so jobs are followed with `scontrol show job`, which remembers an ended
 * job for `MinJobAge` seconds (300 by default).
 *
 * @module
 */

import type { SlurmExecutorSpec } from "../types/mod.ts";

/** What `scontrol show job` says about a job. */
export interface JobRecord {
  /** `PENDING`, `RUNNING`, `COMPLETED`, `CANCELLED`, ... */
  state: string;
  /** Why it waits or ended (`None`, `Resources`, `NonZeroExitCode`, `TimeLimit`...). */
  reason: string;
  /** Allocated nodes (empty while pending). */
  nodes: string;
  /** Partition. */
  partition: string;
  /** The batch script's exit code, or null. */
  exitCode: number | null;
  /** Times Slurm requeued it. */
  restarts: number;
}

/** Options of {@linkcode sbatchArgv}. */
export interface SbatchOptions {
  /** Job name. */
  jobName: string;
  /** The batch script. */
  script: string;
  /** Slurm's stdout and stderr files of the job. */
  stdoutPath: string;
  /** Slurm's stdout and stderr files of the job. */
  stderrPath: string;
  /** Working folder of the job. */
  cwd: string;
  /** Phase timeout in seconds: the default `--time`, rounded up to minutes. */
  timeoutS: number;
}

/**
 * The argv of `sbatch` for a phase. Output files are opened in append mode, so a requeued job
 * continues its files instead of truncating them; `--requeue` lets Slurm requeue it after a node
 * failure or preemption, under the same job id.
 */
export function sbatchArgv(slurm: SlurmExecutorSpec, options: SbatchOptions): string[] {
  const minutes = Math.max(1, Math.ceil(options.timeoutS / 60));
  const argv = [
    "sbatch",
    "--parsable",
    `--job-name=${options.jobName}`,
    `--output=${options.stdoutPath}`,
    `--error=${options.stderrPath}`,
    "--open-mode=append",
    `--chdir=${options.cwd}`,
    "--export=ALL",
    "--requeue",
    `--time=${slurm.time ?? String(minutes)}`,
  ];
  if (slurm.partition) argv.push(`--partition=${slurm.partition}`);
  if (slurm.nodes !== undefined) argv.push(`--nodes=${slurm.nodes}`);
  if (slurm.gpusPerNode !== undefined) argv.push(`--gpus-per-node=${slurm.gpusPerNode}`);
  if (slurm.account) argv.push(`--account=${slurm.account}`);
  if (slurm.qos) argv.push(`--qos=${slurm.qos}`);
  argv.push(...slurm.extraArgs, options.script);
  return argv;
}

/** The job id in `sbatch --parsable` output (`12` or `12;cluster`). */
export function parseSbatchOutput(text: string): string {
  const id = text.trim().split("\n").pop()!.split(";")[0].trim();
  if (!/^\d+(_\d+)?$/.test(id)) throw new Error(`sbatch printed no job id: ${text.trim()}`);
  return id;
}

/** Parses one line of `scontrol show job -o` (key=value words). */
export function parseJobRecord(line: string): JobRecord {
  const field = (key: string) => line.match(new RegExp(`(?:^|\\s)${key}=(\\S*)`))?.[1] ?? "";
  const exit = field("ExitCode").match(/^(\d+):(\d+)$/);
  return {
    state: field("JobState"),
    reason: field("Reason"),
    nodes: field("NodeList") === "(null)" ? "" : field("NodeList"),
    partition: field("Partition"),
    exitCode: exit ? Number(exit[1]) : null,
    restarts: Number(field("Restarts")) || 0,
  };
}

/** Output of a client command. */
export interface ClientOutput {
  /** Exit code 0. */
  ok: boolean;
  /** Standard output. */
  stdout: string;
  /** Standard error. */
  stderr: string;
}

/**
 * Runs a Slurm client (`argv[0]` on PATH) with `env` on top of the harness's environment; a
 * missing program comes back as not ok.
 */
export async function slurmClient(
  argv: string[],
  env: Record<string, string> = {},
): Promise<ClientOutput> {
  try {
    const out = await new Deno.Command(argv[0], {
      args: argv.slice(1),
      env,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const decode = (b: Uint8Array) => new TextDecoder().decode(b);
    return { ok: out.success, stdout: decode(out.stdout), stderr: decode(out.stderr) };
  } catch (e) {
    return { ok: false, stdout: "", stderr: `${argv[0]}: ${e instanceof Error ? e.message : e}` };
  }
}

/**
 * The job's record, `"unknown"` when the controller no longer (or never) knew it, or
 * `"unreachable"` when the query itself failed.
 */
export async function queryJob(jobId: string): Promise<JobRecord | "unknown" | "unreachable"> {
  const out = await slurmClient(["scontrol", "show", "job", "-o", jobId]);
  if (!out.ok) return /Invalid job id/i.test(out.stderr) ? "unknown" : "unreachable";
  const line = out.stdout.split("\n").find((l) => l.includes(`JobId=${jobId} `));
  return line ? parseJobRecord(line) : "unknown";
}

/** What `scontrol show node` says about one node. */
export interface NodeRecord {
  /** Node name. */
  name: string;
  /** `IDLE`, `DOWN+NOT_RESPONDING`, `IDLE+DRAIN`... */
  state: string;
  /** Why an administrator or Slurm took it out of service (empty when none). */
  reason: string;
}

/** Parses `scontrol show node -o` (one node a line; `Reason=` runs to the end of the line). */
export function parseNodeRecords(text: string): NodeRecord[] {
  return text.split("\n").filter((line) => line.startsWith("NodeName=")).map((line) => ({
    name: line.match(/^NodeName=(\S+)/)![1],
    state: line.match(/\sState=(\S+)/)?.[1] ?? "",
    reason: line.match(/\sReason=(.*)$/)?.[1].trim() ?? "",
  }));
}

/**
 * The nodes of a node list (`node[1-2]`) that are out of service, as one phrase
 * (`node1 DOWN+NOT_RESPONDING: Not responding [slurm@...]`), or `""` when all are healthy or
 * the controller cannot say.
 */
export async function unhealthyNodes(nodeList: string): Promise<string> {
  if (!nodeList) return "";
  const out = await slurmClient(["scontrol", "show", "node", "-o", nodeList]);
  if (!out.ok) return "";
  return parseNodeRecords(out.stdout)
    .filter((n) => /DOWN|DRAIN|FAIL|NOT_RESPONDING|UNKNOWN/.test(n.state))
    .map((n) => `${n.name} ${n.state}${n.reason ? `: ${n.reason}` : ""}`)
    .join(", ");
}

/** Asks Slurm to cancel a job (`scancel`); true when the request was accepted. */
export async function cancelJob(jobId: string): Promise<boolean> {
  return (await slurmClient(["scancel", jobId])).ok;
}

/** Cancels at once, synchronously (for the `unload` event, when the harness exits). */
export function cancelJobNow(jobId: string): void {
  try {
    new Deno.Command("scancel", { args: [jobId], stdout: "null", stderr: "null" }).outputSync();
  } catch { /* nothing more can be done while exiting */ }
}

let version: Promise<string> | undefined;

/** `slurm 22.05.8`, or `slurm (unknown version)`; asked once per process. */
export function schedulerVersion(): Promise<string> {
  version ??= slurmClient(["sinfo", "-V"]).then((o) =>
    o.ok ? o.stdout.trim() : "slurm (unknown version)"
  );
  return version;
}
