/**
 * `manifest.json`: what produced a run — harness version, git commit and dirty flag, Deno and
 * OS, the argv and (redacted) environment of every child, and hashes of the inputs — so a
 * result can be trusted, reproduced or questioned months later.
 *
 * @module
 */

import { redactEnv } from "../../process/mod.ts";
import { PROJECT_DIR } from "../../presets/mod.ts";
import type { EnvironmentFacts } from "./environment.ts";

/** Version of the harness, recorded in every manifest and summary. */
export const HARNESS_VERSION = "0.1.0";

/** One child process as recorded. */
export interface ManifestChild {
  /** Phase it ran. */
  phase: string;
  /** Program and arguments. */
  argv: string[];
  /** Variables the harness set (secret-looking names redacted). */
  env: Record<string, string>;
  /** Working folder. */
  cwd: string;
}

/** The cluster a phase ran on (Slurm executor). */
export interface ClusterRecord {
  /** `slurm-wlm 22.05.8`. */
  scheduler: string;
  /** Job id. */
  job_id: string;
  /** Partition. */
  partition: string;
  /** Nodes the job ran on. */
  nodes: string;
  /** Final Slurm state. */
  state: string;
  /** Times Slurm requeued the job. */
  restarts: number;
}

/** The manifest document. */
export interface Manifest {
  /** Harness version. */
  harness_version: string;
  /** Commit of the harness tree and whether it had uncommitted changes. */
  git: { commit: string | null; dirty: boolean | null };
  /** Runtime. */
  deno: string;
  /** Operating system and architecture. */
  os: string;
  /** Command line of the harness. */
  harness_argv: string[];
  /** Experiment file and its SHA-256. */
  experiment_file: string | null;
  /** Hashes of inputs (experiment file, resolved experiment, code inputs). */
  input_hashes: Record<string, string>;
  /** Children launched, in order. */
  children: ManifestChild[];
  /** Folder relative paths of the experiment resolved against (what `rerun` resolves with). */
  base_dir?: string;
  /** Machine, frameworks, variables and code inputs (filled in while the first phase runs). */
  environment?: EnvironmentFacts;
  /** Phases run as Slurm jobs: the cluster each ran on, by phase. */
  clusters?: Record<string, ClusterRecord>;
  /**
   * Phases run offline and imported (`--import`): the machine they ran on (GPU, CUDA, torch,
   * DeepSpeed), as the bundle's `offline_environment.json` tells it.
   */
  ran_offline?: Record<string, unknown>;
}

async function git(args: string[]): Promise<string | null> {
  try {
    const out = await new Deno.Command("git", {
      args: ["-C", PROJECT_DIR, ...args],
      stdout: "piped",
      stderr: "null",
    }).output();
    return out.success ? new TextDecoder().decode(out.stdout).trim() : null;
  } catch {
    return null;
  }
}

/** Commit and dirty flag of the harness checkout (nulls outside git). */
export async function gitState(): Promise<{ commit: string | null; dirty: boolean | null }> {
  const commit = await git(["rev-parse", "HEAD"]);
  if (commit === null) return { commit: null, dirty: null };
  const status = await git(["status", "--porcelain", "--untracked-files=no"]);
  return { commit, dirty: status === null ? null : status.length > 0 };
}

/**
 * A fresh manifest with no children yet. The git state is filled in when `git` resolves, so the
 * first phase need not wait for two git processes; await it before the final write.
 */
export function newManifest(
  experimentFile: string | null,
  inputHashes: Record<string, string>,
  git: Promise<Manifest["git"]> = gitState(),
): { manifest: Manifest; gitKnown: Promise<void> } {
  const manifest: Manifest = {
    harness_version: HARNESS_VERSION,
    git: { commit: null, dirty: null },
    deno: Deno.version.deno,
    os: `${Deno.build.os} ${Deno.build.arch}`,
    harness_argv: [...Deno.args],
    experiment_file: experimentFile,
    input_hashes: inputHashes,
    children: [],
  };
  return { manifest, gitKnown: git.then((g) => void (manifest.git = g)) };
}

/** Records a launched child with its environment redacted. */
export function recordChild(
  manifest: Manifest,
  phase: string,
  argv: string[],
  env: Record<string, string>,
  cwd: string,
): void {
  manifest.children.push({ phase, argv: [...argv], env: redactEnv(env), cwd });
}
