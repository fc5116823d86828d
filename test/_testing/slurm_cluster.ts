/**
 * Finds the Slurm cluster the Slurm executor tests run against: `SLURM_CONF` if set, else the
 * one `tools/slurm_cluster.sh start` leaves in `<project>/.slurm/`. Under CI (`CI=true`) the tests
 * must not be skipped: {@linkcode SLURM_IGNORE} is then false, and {@linkcode assertSlurmReachable}
 * fails with the probe's reason. On a developer machine without a cluster they are ignored, with
 * the reason printed once.
 *
 * @module
 */

import { join } from "node:path";
import { PROJECT } from "./cli_harness.ts";

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
