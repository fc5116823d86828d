/**
 * Test helpers for the reference trainer, used by its tests and by bench/trainer_bench.ts: run its
 * CLI in-process or as a real subprocess, read metrics files, and find the first step where two
 * runs differ.
 *
 * @module
 */

import { join } from "node:path";
import { main } from "../../reference_trainer/mod.ts";

/** The quickstart topology: 4 ranks, EP 2 with expert 2 replicated, ZeRO-2, bf16, GA 2. */
export const QUICKSTART: readonly string[] = [
  "--world-size",
  "4",
  "--ep-size",
  "2",
  "--placement",
  "[[0,1,2],[2,3]]",
  "--zero-stage",
  "2",
  "--precision",
  "bf16",
  "--grad-accum",
  "2",
  "--quiet",
];

/** Result of a CLI run. */
export interface CliResult {
  /** Exit code. */
  code: number;
  /** stderr lines. */
  stderr: string[];
  /** stdout lines. */
  stdout: string[];
}

/** Runs the CLI in this process (no environment unless given). */
export async function runInProcess(
  argv: string[],
  env: Record<string, string | undefined> = {},
): Promise<CliResult> {
  const stderr: string[] = [], stdout: string[] = [];
  const code = await main(argv, env, { err: (l) => stderr.push(l), out: (l) => stdout.push(l) });
  return { code, stderr, stdout };
}

/** The CLI entry file. */
export const CLI_PATH: string = new URL("../../reference_trainer/cli.ts", import.meta.url).pathname;

/** Runs the CLI as a real subprocess (`deno run -A reference_trainer/cli.ts ...`) in `cwd`. */
export async function runSubprocess(
  argv: string[],
  cwd: string,
  env: Record<string, string> = {},
): Promise<CliResult> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--no-check", CLI_PATH, ...argv],
    cwd,
    env: { NO_COLOR: "1", ...env },
    clearEnv: false,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const lines = (b: Uint8Array) => new TextDecoder().decode(b).split("\n").filter((l) => l !== "");
  return { code: out.code, stderr: lines(out.stderr), stdout: lines(out.stdout) };
}

/** A parsed metrics file. */
export interface Metrics {
  /** Step records by step. */
  steps: Map<number, { step: number; loss: number; lr: number; grad_norm: number }>;
  /** Event records by event name (last wins). */
  events: Map<string, Record<string, unknown> & { digests?: Record<string, string> }>;
}

/** Reads a metrics JSONL file. */
export function readMetrics(path: string): Metrics {
  const steps: Metrics["steps"] = new Map();
  const events: Metrics["events"] = new Map();
  for (const line of Deno.readTextFileSync(path).split("\n")) {
    if (line.trim() === "") continue;
    const r = JSON.parse(line);
    if (typeof r.event === "string") events.set(r.event, r);
    else steps.set(r.step, r);
  }
  return { steps, events };
}

/** First step of `b` whose `field` differs from `a` (null when all equal); throws on gaps. */
export function firstDiff(a: Metrics, b: Metrics, field: "loss" | "lr" = "loss"): number | null {
  for (const [step, rec] of [...b.steps].sort(([x], [y]) => x - y)) {
    const base = a.steps.get(step);
    if (!base) throw new Error(`step ${step} missing from the baseline`);
    if (!Object.is(base[field], rec[field])) return step;
  }
  return null;
}

/** Components whose digests differ between two digest maps. */
export function digestDiff(a: Record<string, string>, b: Record<string, string>): string[] {
  return Object.keys(a).filter((k) => a[k] !== b[k]).sort();
}

/** A temp folder removed by the returned disposer. */
export async function tempDir(): Promise<{ path: string; [Symbol.asyncDispose](): Promise<void> }> {
  const path = await Deno.makeTempDir({ prefix: "reference_trainer_" });
  return {
    path,
    [Symbol.asyncDispose]: () => Deno.remove(path, { recursive: true }),
  };
}

/** `join` re-exported for tests. */
export { join };
