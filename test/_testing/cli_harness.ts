/**
 * Helpers for end-to-end tests: run the real CLI as a child process on experiment files
 * written into a temporary folder, and read what it left behind.
 *
 * @module
 */

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { stringify } from "yaml";
import type { RunSummary } from "../../src/types/summary.ts";

/** The project folder. */
export const PROJECT: string = join(dirname(fileURLToPath(import.meta.url)), "../..");

/** The CLI entry. */
export const CLI: string = join(PROJECT, "src/cli/main.ts");

/** Path of a fixture trainer script. */
export function fixtureTrainer(name: string): string {
  return join(PROJECT, "test/trainers", name);
}

/** Result of one CLI run. */
export interface CliRun {
  /** Exit code. */
  code: number;
  /** Captured stdout. */
  stdout: string;
  /** Captured stderr. */
  stderr: string;
}

/** Runs `deno run -A src/cli/main.ts <args>` and waits for it. */
export async function runCli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", CLI, ...args],
    cwd: PROJECT,
    env: { NO_COLOR: "1", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** `parity run <file> --results <results> --quiet`, each of `sets` as a `--set`. */
export function runExperiment(
  file: string,
  results: string,
  sets: string[] = [],
  env: Record<string, string> = {},
): Promise<CliRun> {
  const overrides = sets.flatMap((s) => ["--set", s]);
  return runCli(["run", file, "--results", results, "--quiet", ...overrides], env);
}

/**
 * The CI schedule of the DeepSpeed experiments that train 100 steps and save after step 50: the
 * same save, 10 resumed steps instead of 50 (the CI budget; docs/PERFORMANCE.md, "Test suite").
 */
export const TEN_RESUMED_STEPS = "schedule={steps: 60, save_at: 50}";

/** Writes an experiment object as YAML into `dir` and returns its path. */
export async function writeExperiment(
  dir: string,
  name: string,
  experiment: unknown,
): Promise<string> {
  const path = join(dir, name);
  await Deno.writeTextFile(path, stringify(experiment));
  return path;
}

/** Reads `<results>/<experiment>/latest/summary.json`. */
export async function latestSummary(results: string, experiment: string): Promise<RunSummary> {
  return JSON.parse(await Deno.readTextFile(join(results, experiment, "latest", "summary.json")));
}

/** Lines of a child's log that say what went wrong (a rank's abort, a Python traceback). */
const ERROR_LINE = /error|exception|traceback|terminate called|what\(\)|abort|fatal|signal/i;

/**
 * What a test prints when a run's verdict is not the one expected: the findings, and for each
 * phase that did not end ok the error lines of its logs. torchrun ends a failed launch with its
 * own summary, so the tail alone hides the rank's message ("terminate called ...").
 */
export async function failureContext(results: string, experiment: string): Promise<string> {
  let summary: RunSummary;
  try {
    summary = await latestSummary(results, experiment);
  } catch {
    return `${experiment}: no summary.json`;
  }
  const out = [JSON.stringify(summary.findings ?? [])];
  for (const phase of summary.phases) {
    if (phase.status === "ok" || phase.status === "skipped") continue;
    for (const log of ["stderr.log", "stdout.log"]) {
      const path = join(results, experiment, "latest", "phases", phase.name, log);
      const text = await Deno.readTextFile(path).catch(() => "");
      const lines = text.split("\n").filter((l) => ERROR_LINE.test(l)).slice(0, 40);
      if (lines.length) out.push(`${phase.name}/${log}:`, ...lines);
    }
  }
  return out.join("\n");
}

/** A `command` trainer entry running a fixture script with this Deno. */
export function denoCommand(script: string, ...args: string[]): string[] {
  return [Deno.execPath(), "run", "-A", "--quiet", fixtureTrainer(script), ...args];
}
