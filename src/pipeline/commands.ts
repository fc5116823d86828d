/**
 * Turns a phase node into a concrete child process: the placeholder values of the trainer
 * contract, the `PARITY_*` environment, and the argv — either the user's template or the
 * `reference` preset's expansion. Presets are only expansions: the runner never imports the
 * reference trainer, it launches it like any other program.
 *
 * @module
 */

import { dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { interpolate } from "../experiment/mod.ts";
import type { Experiment, ProcessEntry, TrainerArgs } from "../experiment/schema.ts";
import type { PhaseEvidence } from "../parity/mod.ts";
import type { PhaseNode } from "./phases.ts";

/** The project folder (where `deno.json` and `src/` live). */
export const PROJECT_DIR: string = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** The reference trainer's CLI module, launched by the `reference` preset. */
export const REFERENCE_CLI: string = join(PROJECT_DIR, "src/reference/cli.ts");

/** Where a phase's artifacts live and what it must read. */
export interface PhasePaths {
  /** `<run>/phases/<phase>`. */
  dir: string;
  /** Metrics JSONL the trainer appends to. */
  metricsFile: string;
  /** Split checkpoint folder (`global_step<N>/` and `latest` inside). */
  checkpointDir?: string;
  /** Checkpoint to load. */
  resumeFrom?: string;
  /** Plan file to execute (resume kind `plan`). */
  plan?: string;
  /** Converter input (native tag folder). */
  native?: string;
  /** Converter output (universal folder). */
  universal?: string;
  /** Planner input: target topology JSON. */
  target?: string;
  /** Planner output. */
  planOut?: string;
}

/** A phase ready to launch. */
export interface PhaseCommand {
  /** Program and arguments (never passed through a shell). */
  argv: string[];
  /** Variables the harness sets on top of its own environment. */
  env: Record<string, string>;
  /** Working folder. */
  cwd: string;
  /** Timeout in seconds. */
  timeoutS: number;
  /** Placeholder values used. */
  vars: Record<string, string>;
}

function argText(v: unknown): string {
  return typeof v === "string" ? v : JSON.stringify(v);
}

/** `world_size` → `--world-size`: the reference trainer's flag for an argument key. */
export function referenceFlag(key: string): string {
  return `--${key.replaceAll("_", "-")}`;
}

/** Reference-trainer flags for a set of arguments, in sorted key order. */
export function referenceArgFlags(args: TrainerArgs): string[] {
  const out: string[] = [];
  for (const key of Object.keys(args).sort()) {
    const v = args[key];
    if (v === undefined || v === null || v === "") continue;
    out.push(referenceFlag(key), argText(v));
  }
  return out;
}

/** The trainer-contract placeholder values of a phase (ARCHITECTURE.md). */
export function phaseVars(
  exp: Experiment,
  node: PhaseNode,
  paths: PhasePaths,
  harnessEnv: Record<string, string>,
): Record<string, string> {
  const vars: Record<string, string> = {
    phase: node.name,
    experiment: exp.name,
    steps: String(exp.schedule.steps),
    stop_at: String(node.stopAt),
    save_at: node.saveAt !== undefined ? String(node.saveAt) : "",
    seed: String(exp.seed),
    checkpoint_dir: paths.checkpointDir ?? "",
    resume_from: paths.resumeFrom ?? "",
    resume_kind: node.resumeKind ?? "",
    plan: paths.plan ?? "",
    metrics_file: paths.metricsFile,
    run_dir: paths.dir,
    native: paths.native ?? "",
    universal: paths.universal ?? "",
    source_checkpoint: paths.native ?? "",
    target: paths.target ?? "",
    policy: node.policy ?? "",
    plan_out: paths.planOut ?? "",
  };
  for (const [k, v] of Object.entries(node.args)) {
    if (v !== undefined) vars[`args.${k}`] = argText(v);
  }
  for (const [k, v] of Object.entries(harnessEnv)) vars[`env.${k}`] = v;
  return vars;
}

/** The `PARITY_*` variables of the trainer contract. */
export function parityEnv(vars: Record<string, string>): Record<string, string> {
  return {
    PARITY_PHASE: vars.phase,
    PARITY_STEPS: vars.steps,
    PARITY_STOP_AT: vars.stop_at,
    PARITY_SAVE_AT: vars.save_at,
    PARITY_SEED: vars.seed,
    PARITY_CHECKPOINT_DIR: vars.checkpoint_dir,
    PARITY_RESUME_FROM: vars.resume_from,
    PARITY_RESUME_KIND: vars.resume_kind,
    PARITY_PLAN: vars.plan,
    PARITY_METRICS_FILE: vars.metrics_file,
    PARITY_RUN_DIR: vars.run_dir,
  };
}

function referenceArgv(exp: Experiment, node: PhaseNode, vars: Record<string, string>): string[] {
  const deno = [Deno.execPath(), "run", "-A", "--quiet", REFERENCE_CLI];
  const fault = node.args.fault ? ["--fault", String(node.args.fault)] : [];
  if (node.tool === "converter") {
    return [
      ...deno,
      "convert",
      "--input_folder",
      vars.native,
      "--output_folder",
      vars.universal,
      ...fault,
    ];
  }
  if (node.tool === "planner") {
    return [
      ...deno,
      "plan",
      "--source-checkpoint",
      vars.source_checkpoint,
      "--target",
      vars.target,
      "--policy",
      vars.policy,
      "--out",
      vars.plan_out,
      "--element-size",
      String(exp.plan_sync?.element_size ?? 4),
      ...fault,
    ];
  }
  const argv = [
    ...deno,
    "train",
    "--steps",
    vars.steps,
    "--stop-at",
    vars.stop_at,
    "--seed",
    vars.seed,
    "--metrics-file",
    vars.metrics_file,
  ];
  if (vars.save_at) argv.push("--save-at", vars.save_at, "--checkpoint-dir", vars.checkpoint_dir);
  if (vars.resume_from) {
    argv.push("--resume-from", vars.resume_from, "--resume-kind", vars.resume_kind);
  }
  if (vars.plan) argv.push("--plan", vars.plan);
  argv.push(...referenceArgFlags(node.args));
  return argv;
}

function resolveCwd(
  entry: ProcessEntry,
  vars: Record<string, string>,
  baseDir: string,
  fallback: string,
) {
  if (!entry.cwd) return fallback;
  const cwd = interpolate(entry.cwd, vars);
  return isAbsolute(cwd) ? cwd : resolve(baseDir, cwd);
}

/**
 * The command of one phase. `baseDir` resolves relative `cwd` entries (the experiment file's
 * folder); `harnessEnv` feeds `${env.NAME}` placeholders.
 */
export function phaseCommand(
  exp: Experiment,
  node: PhaseNode,
  paths: PhasePaths,
  baseDir: string,
  harnessEnv: Record<string, string>,
): PhaseCommand {
  const vars = phaseVars(exp, node, paths, harnessEnv);
  const entry = node.entry;
  const argv = entry.preset === "reference"
    ? referenceArgv(exp, node, vars)
    : (entry.command ?? []).map((t) => interpolate(t, vars));
  const env: Record<string, string> = { ...parityEnv(vars) };
  for (const [k, v] of Object.entries({ ...(entry.env ?? {}), ...(node.extraEnv ?? {}) })) {
    env[k] = interpolate(v, vars);
  }
  return {
    argv,
    env,
    cwd: resolveCwd(entry, vars, baseDir, paths.dir),
    timeoutS: entry.timeout,
    vars,
  };
}

/** Where a phase's metrics are read from, with its reader options. */
export interface MetricsSource {
  /** File or folder. */
  path: string;
  /** Reader options (format and format-specific settings). */
  options: NonNullable<PhaseEvidence["metrics"]>;
}

/** Where a phase's metrics are read from, with its format options. */
export function metricsSource(
  node: PhaseNode,
  vars: Record<string, string>,
  baseDir: string,
): MetricsSource {
  const m = node.entry.metrics;
  const raw = m?.path ? interpolate(m.path, vars) : vars.metrics_file;
  return {
    path: isAbsolute(raw) ? raw : resolve(baseDir, raw),
    options: {
      format: m?.format ?? "jsonl",
      pattern: m?.pattern,
      step_unit: m?.step_unit,
      samples_per_step: m?.samples_per_step,
    },
  };
}
