/**
 * Finds the Slurm cluster the Slurm executor tests run against: `SLURM_CONF` if set, else the
 * one `tools/slurm_cluster.sh start` leaves in `<project>/.slurm/`. Under CI (`CI=true`) the tests
 * must not be skipped: {@linkcode SLURM_IGNORE} is then false, and {@linkcode assertSlurmReachable}
 * fails with the probe's reason. On a developer machine without a cluster they are ignored, with
 * the reason printed once.
 *
 * @module
 */

import { dirname, join } from "node:path";
import { CLI, denoCommand, PROJECT } from "./cli_harness.ts";

/** What the probe found. */
export interface SlurmProbe {
  /** `scontrol ping` answered and the test node is up. */
  ok: boolean;
  /** Why not (empty when ok). */
  reason: string;
  /** Environment that points clients at the cluster (`SLURM_CONF`). */
  env: Record<string, string>;
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

async function probe(): Promise<SlurmProbe> {
  const conf = Deno.env.get("SLURM_CONF") ?? join(PROJECT, ".slurm", "slurm.conf");
  const env: Record<string, string> = { SLURM_CONF: conf };
  if (!exists(conf)) {
    return {
      ok: false,
      reason: `no Slurm config at ${conf} (run tools/slurm_cluster.sh start)`,
      env,
    };
  }
  try {
    const out = await new Deno.Command("sinfo", {
      args: ["-h", "-o", "%t"],
      env,
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(10_000),
    }).output();
    const text = new TextDecoder().decode(out.stdout).trim();
    if (!out.success || !/idle|mix|alloc/.test(text)) {
      const err = new TextDecoder().decode(out.stderr).trim();
      return { ok: false, reason: `cluster not ready: sinfo says ${text || err}`, env };
    }
    return { ok: true, reason: "", env };
  } catch (e) {
    return { ok: false, reason: `sinfo failed: ${e instanceof Error ? e.message : e}`, env };
  }
}

/** The probe, run once when the test module loads. */
export const SLURM: SlurmProbe = await probe();

/** Running under CI, where the Slurm tests may not be skipped. */
export const IN_CI: boolean = Deno.env.get("CI") === "true";

/** `ignore:` of every Slurm test: only outside CI, and only without a reachable cluster. */
export const SLURM_IGNORE: boolean = !SLURM.ok && !IN_CI;

if (SLURM_IGNORE) console.log(`Slurm executor tests ignored: ${SLURM.reason}`);

/** Fails (under CI) when the cluster is not reachable. */
export function assertSlurmReachable(): void {
  if (!SLURM.ok) throw new Error(`the Slurm test cluster is not reachable: ${SLURM.reason}`);
}

/** A Slurm client command's standard output (with the cluster's environment). */
export async function slurmOutput(argv: string[]): Promise<string> {
  const out = await new Deno.Command(argv[0], {
    args: argv.slice(1),
    env: SLURM.env,
    stdout: "piped",
    stderr: "null",
  }).output();
  return new TextDecoder().decode(out.stdout);
}

/** The job's state as `scontrol show job` reports it (`""` once forgotten). */
export async function jobState(jobId: string): Promise<string> {
  const text = await slurmOutput(["scontrol", "show", "job", "-o", jobId]);
  return text.match(/JobState=(\S+)/)?.[1] ?? "";
}

/** Ids of the jobs `squeue` lists as pending or running. */
export async function queuedJobs(): Promise<string[]> {
  const text = await slurmOutput(["squeue", "-h", "-o", "%i"]);
  return text.split("\n").map((l) => l.trim()).filter((l) => l.length > 0);
}

/** Partition of tools/slurm_cluster.sh whose nodes the failure tests may kill. */
export const FAULTS_PARTITION = "faults";

/** Nodes of a partition that can take jobs now. */
export async function partitionNodes(partition: string): Promise<string[]> {
  const text = await slurmOutput(["sinfo", "-h", "-N", "-p", partition, "-o", "%N %t"]);
  return text.split("\n").map((l) => l.trim().split(/\s+/))
    .filter(([name, state]) => name && /^(idle|mix|alloc)/.test(state ?? ""))
    .map(([name]) => name);
}

/** The node list of a job as `scontrol show job` reports it (`""` while pending). */
export async function jobNodes(jobId: string): Promise<string> {
  const text = await slurmOutput(["scontrol", "show", "job", "-o", jobId]);
  const nodes = text.match(/\sNodeList=(\S+)/)?.[1] ?? "";
  return nodes === "(null)" ? "" : nodes;
}

/**
 * Runs `tools/slurm_cluster.sh <args>` on the cluster the tests use (kill-node, start-node,
 * net-down, net-up); throws with its output when it fails.
 */
export async function clusterTool(args: string[]): Promise<void> {
  const out = await new Deno.Command(join(PROJECT, "tools/slurm_cluster.sh"), {
    args,
    env: { ...SLURM.env, PARITY_SLURM_DIR: dirname(SLURM.env.SLURM_CONF) },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    throw new Error(`tools/slurm_cluster.sh ${args.join(" ")} failed: ${text}`);
  }
}

/** Waits until `check` holds, polling every 200 ms; throws after `ms`. */
export async function waitFor(
  check: () => Promise<boolean>,
  what: string,
  ms = 30_000,
): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A JSON file as an object. */
export async function readJson(path: string): Promise<Record<string, unknown>> {
  return JSON.parse(await Deno.readTextFile(path));
}

/** The job id the harness recorded for a phase of the newest run, once it has submitted. */
export async function submittedJob(
  results: string,
  experiment: string,
  phase: string,
): Promise<string> {
  let id = "";
  await waitFor(async () => {
    try {
      for await (const run of Deno.readDir(join(results, experiment))) {
        const path = join(results, experiment, run.name, "phases", phase, "slurm_job.json");
        try {
          id = String((await readJson(path)).job_id);
          return true;
        } catch { /* not yet */ }
      }
    } catch { /* no run folder yet */ }
    return false;
  }, `the ${phase} job to be submitted`);
  return id;
}

/** `parity run <file> --results <results>` as a child the test can signal. */
export function startHarness(file: string, results: string): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", CLI, "run", file, "--results", results],
    cwd: PROJECT,
    env: { NO_COLOR: "1", ...SLURM.env },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/**
 * An experiment of test/trainers/echo_trainer.ts on Slurm (its switches in `env`), 8 steps,
 * save at 4, a native resume.
 */
export function echoExperiment(
  name: string,
  env: Record<string, string>,
  timeout = 120,
  executor: Record<string, unknown> = { kind: "slurm", poll: 0.5 },
  trainer: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    name,
    schedule: { steps: 8, save_at: 4 },
    executor,
    trainer: { command: denoCommand("echo_trainer.ts", `slurm-${name}`), timeout, env, ...trainer },
    resume: { native: { from: "native" } },
  };
}
