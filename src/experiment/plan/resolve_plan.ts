/**
 * Compiles a validated experiment, once per run, into the resolved phase plan: every phase's
 * argv, environment, working folder, artifact paths, metrics source, completion marker, code
 * inputs, topology and lane. The CLI's `run` and `plan` resolve it; the runner writes it to the
 * run folder as `plan.json`, schedules and caches its specs, the judge reads them; rerun, goldens
 * and `--import` read the plan, never the experiment again.
 *
 * All paths lie in the run folder, written relative to it (under `RUN_FOLDER`) until
 * `placePlan` puts the plan in one. A phase reused from the cache is linked into it (see the
 * runner), so a consumer's command never depends on where its producer actually ran.
 *
 * @module
 */

import { deviceDemand } from "./device_demand.ts";
import {
  CHECKPOINT_FILES_DOCUMENT,
  checkpointFolder,
  DEFAULT_ELEMENT_SIZE,
  DEFAULT_METRICS_FORMAT,
  type Diagnostic,
  DRIFT_DEFAULTS,
  type ExecutorSpec,
  type LaneChoice,
  type MetricsSpec,
  type PhasePaths,
  type PhaseSpec,
  placePlan,
  type ResolvedPlan,
  RUN_FOLDER,
  savesCheckpoint,
  type SlurmExecutorSpec,
  TOLERANCE_DEFAULTS,
  universalFolder,
} from "../../types/mod.ts";
import { isAbsolute, join, resolve } from "node:path";
import {
  argText,
  checkpointReaderArgv,
  checkpointReaderInputs,
  type PresetDescriptor,
  presetNamed,
  topologyArgs,
} from "../../presets/mod.ts";
import { canonicalJson } from "../canonical_json.ts";
import { checkpointPhase, phaseGraph, type PhaseNode, trainerPreset } from "./phase_graph.ts";
import { checkpointFormatOf, readerPythonOf } from "./checkpoint_read_back.ts";
import { interpolate, interpolateArg } from "../placeholders.ts";
import type { ExecutorEntry, Experiment, TrainerArgs } from "../schema.ts";
import { lastSave, saveSteps, stepList } from "./save_steps.ts";

/** Warning code of a command trainer's split without a completion marker (docs/parity.md). */
export const NO_CHECKPOINT_MARKER = "no-checkpoint-marker";

/** Topology arguments of a `command:` trainer that declares none (docs/experiment-files.md). */
export const DEFAULT_TOPOLOGY_ARGS: readonly string[] = [
  "world_size",
  "ep_size",
  "autoep_size",
  "placement",
  "zero_stage",
  "tp_size",
  "pp_size",
];

/** Placeholder values that are paths: replaced by tokens in the cache's view of a command. */
const PATH_VARS = [
  "checkpoint_dir",
  "output_dir",
  "resume_from",
  "plan",
  "metrics_file",
  "run_dir",
  "native",
  "universal",
  "source_checkpoint",
  "target",
  "plan_out",
  "state_out",
] as const;

/** Where the compiled plan lives and what `${env.NAME}` and relative paths resolve against. */
export interface ResolveContext {
  /**
   * The run folder (`<results>/<experiment>/<run-id>`) to place the plan in at once; absent, its
   * run-folder paths stay relative, under `RUN_FOLDER` (what `plan.json` holds).
   */
  runDir?: string;
  /**
   * The experiment file's folder: relative `cwd` and metrics paths resolve against it, and a
   * command entry without `cwd` runs in it.
   */
  baseDir: string;
  /** Environment visible to `${env.NAME}` placeholders. */
  harnessEnv: Record<string, string>;
}

/** Compiles `exp` into the specs of one run (placed in `ctx.runDir` when given). */
export function resolvePlan(exp: Experiment, ctx: ResolveContext): ResolvedPlan {
  const plan = compilePlan(exp, ctx);
  return ctx.runDir === undefined ? plan : placePlan(plan, ctx.runDir);
}

function compilePlan(exp: Experiment, ctx: ResolveContext): ResolvedPlan {
  const runDir = RUN_FOLDER;
  const nodes = phaseGraph(exp);
  const preset = presetNamed(exp.trainer.preset);
  const topologyKeys = preset ? topologyArgs(preset) : [
    ...(exp.trainer.topology_args ?? DEFAULT_TOPOLOGY_ARGS),
  ];
  const saved = pick(exp.trainer.args ?? {}, topologyKeys);
  const tagTemplate = exp.trainer.checkpoint_tag ?? preset?.checkpointTag;
  // One tag folder per save step: the template with that step as `${save_at}`.
  const tag = (step: number) =>
    tagTemplate === undefined ? checkpointFolder(step) : interpolate(tagTemplate, {
      save_at: String(step),
      steps: String(exp.schedule.steps),
      seed: String(exp.seed),
      experiment: exp.name,
    });
  const paths = new Map<string, PhasePaths>();
  const phases = nodes.map((node) => {
    const own = phasePaths(exp, node, runDir, tag, (name) => paths.get(name));
    paths.set(node.name, own);
    const topology = pick(node.args, topologyKeys);
    return compilePhase(exp, node, own, ctx, {
      topology,
      lane: node.role === "resume" || node.role === "calibrate"
        ? chooseLane(node, topology, saved)
        : undefined,
    });
  });
  const split = phases.find(savesCheckpoint);
  const warnings: Diagnostic[] = split && split.checkpointMarker === undefined
    ? [{
      level: "warning",
      code: NO_CHECKPOINT_MARKER,
      phase: split.name,
      message: "trainer.checkpoint_marker is not set, so a split that exits 0 after a " +
        "half-written save counts as complete and is reused; name a file your trainer writes " +
        "last in the tag folder (e.g. checkpoint_marker: checkpoint_complete.json)",
    }]
    : [];
  // Slurm phases wait in the cluster's queue, not on this machine: up to max_jobs at once.
  const maxJobs = Math.max(
    0,
    ...phases.map((p) => p.executor.kind === "slurm" ? p.executor.maxJobs : 0),
  );
  return {
    experiment: exp.name,
    runDir,
    seed: exp.seed,
    parallel: Math.max(exp.parallel, maxJobs),
    ...(exp.devices ? { devices: { kind: exp.devices.kind, ids: [...exp.devices.ids] } } : {}),
    keepCheckpoints: exp.keep_checkpoints,
    phases,
    warnings,
    judge: {
      steps: exp.schedule.steps,
      saveAt: lastSave(exp.schedule),
      saveSteps: saveSteps(exp.schedule),
      metrics: exp.metrics,
      compare: exp.compare ?? [],
      tolerance: exp.tolerance ?? { ...TOLERANCE_DEFAULTS },
      tolerance_declared: exp.tolerance !== undefined,
      golden: exp.golden ?? false,
      drift: { ...DRIFT_DEFAULTS, ...exp.drift },
    },
    charts: { ...exp.charts },
  };
}

function pick(args: TrainerArgs, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) if (args[key] !== undefined) out[key] = args[key];
  return out;
}

/**
 * The lane of a resume against the baseline: declared in the file, else exact on the saved
 * topology and drift on another one (reduction order changes with the layout). Arguments
 * that are not topology never change the lane.
 */
function chooseLane(
  node: PhaseNode,
  topology: Record<string, unknown>,
  saved: Record<string, unknown>,
): LaneChoice {
  if (node.resume?.lane) {
    return {
      lane: node.resume.lane,
      reason: node.resume.lane_reason ?? `declared in resume.${node.resumeName}.lane`,
    };
  }
  const changed = [...new Set([...Object.keys(saved), ...Object.keys(topology)])].sort()
    .filter((key) => canonicalJson(saved[key]) !== canonicalJson(topology[key]));
  if (changed.length === 0) {
    return { lane: "exact", reason: "same topology as the saved checkpoint" };
  }
  const what = changed.flatMap((key) => leafChanges(key, saved[key], topology[key]));
  const shown = what.length > MAX_CHANGES
    ? [...what.slice(0, MAX_CHANGES), `+${what.length - MAX_CHANGES} more`]
    : what;
  return {
    lane: "drift",
    reason: `topology differs from the saved checkpoint (${shown.join(", ")})`,
  };
}

/** Changes named in a lane reason before the rest are counted. */
const MAX_CHANGES = 4;

/**
 * The differing leaves of two topology values as `path old → new`, so a lane reason shows what
 * changed (`placement.ranks[0].experts [0,1,2] → [0,3]`) rather than two cuts of the same JSON.
 * Arrays of scalars are leaves; objects and arrays of objects are walked.
 */
function leafChanges(path: string, saved: unknown, now: unknown): string[] {
  if (canonicalJson(saved) === canonicalJson(now)) return [];
  const walkable = (v: unknown): v is Record<string, unknown> | unknown[] =>
    typeof v === "object" && v !== null &&
    (!Array.isArray(v) || v.some((x) => typeof x === "object" && x !== null));
  if (walkable(saved) && walkable(now) && Array.isArray(saved) === Array.isArray(now)) {
    const keys = Array.isArray(saved)
      ? Array.from({ length: Math.max(saved.length, (now as unknown[]).length) }, (_, i) => i)
      : [...new Set([...Object.keys(saved), ...Object.keys(now)])].sort();
    return keys.flatMap((k) => {
      const at = typeof k === "number" ? `${path}[${k}]` : `${path}.${k}`;
      const get = (v: unknown) => (v as Record<string | number, unknown>)[k];
      return leafChanges(at, get(saved), get(now));
    });
  }
  return [`${path} ${short(saved)} → ${short(now)}`];
}

function short(value: unknown): string {
  if (value === undefined) return "unset";
  const text = argText(value);
  return text.length > 24 ? `${text.slice(0, 21)}...` : text;
}

/** The artifact paths of a phase; `pathsOf` gives those of phases earlier in the graph. */
function phasePaths(
  exp: Experiment,
  node: PhaseNode,
  runDir: string,
  tag: (step: number) => string,
  pathsOf: (phase: string) => PhasePaths | undefined,
): PhasePaths {
  const dir = join(runDir, "phases", node.name);
  const paths: PhasePaths = { dir, metricsFile: join(dir, "metrics.jsonl") };
  // One folder name: the split (or a fused split's baseline) saves into its own output folder,
  // which the resumes load from.
  const splitRoot = outputFolder(join(runDir, "phases", checkpointPhase(exp)));
  const last = lastSave(exp.schedule);
  const splitTag = join(splitRoot, tag(last));
  // The tag a resume (or the converter) reads: the one of its saved step.
  const fromTag = join(splitRoot, tag(node.fromStep ?? last));
  if (node.tool === "trainer") paths.outputDir = outputFolder(dir);
  if (node.saveSteps !== undefined) {
    paths.checkpointDir = splitRoot;
    paths.checkpointTag = splitTag;
    const steps = node.saveSteps ?? [last];
    if (steps.length > 1) {
      paths.checkpointTags = steps.map((step) => ({ step, dir: join(splitRoot, tag(step)) }));
    }
  }
  if (node.role === "convert") {
    paths.native = fromTag;
    paths.universal = join(dir, universalFolder(node.fromStep ?? last));
  }
  if (node.role === "plan") {
    paths.native = splitTag;
    paths.target = join(dir, "target.json");
    paths.planOut = join(dir, "plan.json");
  }
  if (node.role === "execute") {
    paths.native = splitTag;
    paths.plan = pathsOf(`plan-${node.policy}`)?.planOut;
  }
  if (node.role === "execute" || node.tool === "trainer") {
    paths.stateFile = join(dir, "process_state.json");
  }
  if (node.role === "resume" || node.role === "calibrate") {
    if (node.resumeKind === "universal") {
      const convert = pathsOf("convert");
      paths.resumeFrom = convert?.universal;
      paths.checkpointDir = convert?.dir;
    } else {
      paths.resumeFrom = fromTag;
      paths.checkpointDir = splitRoot;
      if (node.resumeKind === "plan") paths.plan = pathsOf(`plan-${node.policy}`)?.planOut;
    }
  }
  return paths;
}

/** A trainer phase's own output (checkpoint) folder inside its phase folder: `${output_dir}`. */
function outputFolder(phaseDir: string): string {
  return join(phaseDir, "checkpoints");
}

/** The trainer-contract placeholder values of a phase (README, "The trainer contract"). */
function phaseVars(
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
    // Several saves are a comma list (`3,6`), one save the step alone, as before.
    save_at: node.saveSteps !== undefined ? stepList(node.saveSteps) : "",
    // The baseline reports its state where the split saves: the save check's reference.
    digest_at: node.role === "baseline" ? stepList(saveSteps(exp.schedule)) : "",
    // A calibration resume scales its LR by this from the first resumed step.
    lr_scale: node.calibration ? String(1 + node.calibration.lr_error) : "",
    seed: String(exp.seed),
    checkpoint_dir: paths.checkpointDir ?? "",
    output_dir: paths.outputDir ?? "",
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
    state_out: paths.stateFile ?? "",
  };
  for (const [k, v] of Object.entries(node.args)) {
    if (v !== undefined) vars[`args.${k}`] = argText(v);
  }
  for (const [k, v] of Object.entries(harnessEnv)) vars[`env.${k}`] = v;
  return vars;
}

/**
 * `${venv}` and `${python}` of a phase: the merged `args.venv` (relative to the experiment file's
 * folder, or absolute) and its `bin/python`; without one, empty and `python3` from `PATH`.
 */
function venvVars(args: TrainerArgs, baseDir: string): { venv: string; python: string } {
  const named = args.venv;
  if (typeof named !== "string" || named === "") return { venv: "", python: "python3" };
  const venv = resolve(baseDir, named);
  return { venv, python: join(venv, "bin", "python") };
}

/** The `PARITY_*` variables of the trainer contract. */
function parityEnv(vars: Record<string, string>): Record<string, string> {
  return {
    PARITY_PHASE: vars.phase,
    PARITY_STEPS: vars.steps,
    PARITY_STOP_AT: vars.stop_at,
    PARITY_SAVE_AT: vars.save_at,
    PARITY_DIGEST_AT: vars.digest_at,
    PARITY_LR_SCALE: vars.lr_scale,
    PARITY_SEED: vars.seed,
    PARITY_CHECKPOINT_DIR: vars.checkpoint_dir,
    PARITY_RESUME_FROM: vars.resume_from,
    PARITY_RESUME_KIND: vars.resume_kind,
    PARITY_PLAN: vars.plan,
    PARITY_METRICS_FILE: vars.metrics_file,
    PARITY_RUN_DIR: vars.run_dir,
  };
}

function compilePhase(
  exp: Experiment,
  node: PhaseNode,
  paths: PhasePaths,
  ctx: ResolveContext,
  judged: { topology: Record<string, unknown>; lane?: LaneChoice },
): PhaseSpec {
  const entry = node.entry;
  if (!entry) throw new Error(`internal: phase ${node.name} has no program (invalid experiment)`);
  const preset = presetNamed(entry.preset);
  const vars = phaseVars(exp, node, paths, ctx.harnessEnv);
  Object.assign(vars, venvVars(node.args, ctx.baseDir));
  // Only a launcher preset's trainer starts a launcher (one per node); its converter and planner
  // are single processes that must not run once per node.
  const executor = resolveExecutor(
    node.resume?.executor ?? entry.executor ?? exp.executor,
    (preset?.launcher ?? false) && node.tool === "trainer",
  );
  const presetCtx = {
    tool: node.tool,
    vars,
    args: node.args,
    elementSize: exp.plan_sync?.element_size ?? DEFAULT_ELEMENT_SIZE,
    baseDir: ctx.baseDir,
    nodes: executor.kind === "slurm" && executor.srun ? executor.nodes ?? 1 : 1,
  };
  const argv = preset
    ? preset.argv(presetCtx)
    : (entry.command ?? []).flatMap((t) => interpolateArg(t, vars));
  const env: Record<string, string> = { ...parityEnv(vars), ...preset?.env?.(presetCtx) };
  for (const [k, v] of Object.entries({ ...entry.env, ...node.resume?.env })) {
    env[k] = interpolate(v, vars);
  }
  // A command trainer runs where its experiment file is, so `command: [python3, train.py]` finds
  // train.py beside the file; presets pass absolute paths and keep the phase folder.
  const cwd = entry.cwd
    ? resolve(ctx.baseDir, interpolate(entry.cwd, vars))
    : preset && !preset.runsInExperimentDir
    ? paths.dir
    : ctx.baseDir;
  const spec: PhaseSpec = {
    name: node.name,
    role: node.role,
    tool: node.tool,
    consumes: node.consumes,
    stopAt: node.stopAt,
    args: node.args,
    topology: judged.topology,
    topologyKey: canonicalJson(judged.topology),
    argv,
    env,
    cwd,
    timeoutS: entry.timeout,
    keyed: keyedCommand(argv, env, vars),
    paths,
    executor,
    codeInputs: [
      ...(entry.code_inputs ?? []),
      ...(preset?.codeInputs ?? []),
      ...(preset?.phaseCodeInputs?.(presetCtx) ?? []),
    ],
  };
  if (node.resumeKind) spec.resumeKind = node.resumeKind;
  // Only with several saves: one save leaves every phase (and its cache key) as it was.
  if (node.fromStep !== undefined && saveSteps(exp.schedule).length > 1) {
    spec.fromStep = node.fromStep;
  }
  if (node.saveSteps !== undefined) spec.saveSteps = node.saveSteps;
  // The pool is this node's: a Slurm job gets its devices from the cluster.
  if (exp.devices && executor.kind === "local") {
    spec.devices = deviceDemand(node.tool, node.args, exp.devices.kind);
  }
  if (node.policy) spec.policy = node.policy;
  if (judged.lane) spec.lane = judged.lane;
  if (node.calibration) spec.calibration = node.calibration;
  const gradAccum = declaredGradAccum(exp, preset, node.args);
  if (gradAccum !== undefined) spec.gradAccum = gradAccum;
  if (node.tool === "trainer") spec.metrics = metricsSpec(entry.metrics, preset, vars, ctx.baseDir);
  const marker = entry.checkpoint_marker ?? preset?.checkpointMarker;
  if (node.saveSteps !== undefined && marker) spec.checkpointMarker = marker;
  const readBack = readBackOf(exp, node, paths, vars, ctx.baseDir);
  if (readBack) {
    spec.readBack = readBack.spec;
    // The reader's code joins the key, unless a folder already listed holds it (the preset's).
    for (const input of readBack.inputs) {
      if (!spec.codeInputs.some((c) => input === c || input.startsWith(`${c}/`))) {
        spec.codeInputs.push(input);
      }
    }
  }
  if (entry.retry) spec.retry = entry.retry;
  if (node.tool === "planner") {
    const { fault: _fault, ...target } = node.args;
    spec.target = target;
  }
  return spec;
}

/**
 * The checkpoint read-back of a split (its tag folder) or a convert phase (its universal folder)
 * when the trainer names a checkpoint format: the reader runs with the preset's Python for the
 * phase's arguments, or the Python beside a command trainer's program.
 */
function readBackOf(
  exp: Experiment,
  node: PhaseNode,
  paths: PhasePaths,
  vars: Record<string, string>,
  baseDir: string,
): { spec: NonNullable<PhaseSpec["readBack"]>; inputs: string[] } | undefined {
  const format = checkpointFormatOf(exp);
  const folder = node.saveSteps !== undefined
    ? paths.checkpointTag
    : node.role === "convert"
    ? paths.universal
    : undefined;
  if (format === undefined || folder === undefined) return undefined;
  const preset = trainerPreset(exp);
  let python: string | undefined;
  if (preset) python = preset.readerPython?.(node.args);
  else if (exp.trainer.command) {
    const template = readerPythonOf(exp.trainer.command);
    const cwd = exp.trainer.cwd ? resolve(baseDir, interpolate(exp.trainer.cwd, vars)) : baseDir;
    const program = template === undefined ? undefined : interpolate(template, vars);
    // A bare name (`${python}` without args.venv: python3) is found on PATH, as the trainer's is.
    if (program !== undefined) python = program.includes("/") ? resolve(cwd, program) : program;
  }
  if (python === undefined) return undefined; // the rules refuse such a file first
  return {
    spec: {
      argv: checkpointReaderArgv(format, python, folder),
      out: join(paths.dir, CHECKPOINT_FILES_DOCUMENT),
    },
    inputs: checkpointReaderInputs(format),
  };
}

/** Where a phase runs: the file's executor entry resolved, local when none says otherwise. */
function resolveExecutor(entry: ExecutorEntry | undefined, launcher: boolean): ExecutorSpec {
  if (entry?.kind !== "slurm") return { kind: "local" };
  const spec: SlurmExecutorSpec = {
    kind: "slurm",
    extraArgs: [...entry.extra_args],
    pollS: entry.poll,
    srun: entry.srun ?? launcher,
    maxJobs: entry.max_jobs,
  };
  if (entry.partition !== undefined) spec.partition = entry.partition;
  if (entry.nodes !== undefined) spec.nodes = entry.nodes;
  if (entry.gpus_per_node !== undefined) spec.gpusPerNode = entry.gpus_per_node;
  if (entry.time !== undefined) spec.time = entry.time;
  if (entry.account !== undefined) spec.account = entry.account;
  if (entry.qos !== undefined) spec.qos = entry.qos;
  return spec;
}

/** Gradient accumulation as declared: `schedule.grad_accum`, else the preset's argument. */
function declaredGradAccum(
  exp: Experiment,
  preset: PresetDescriptor | undefined,
  args: TrainerArgs,
): number | undefined {
  if (exp.schedule.grad_accum !== undefined) return exp.schedule.grad_accum;
  const value = preset?.gradAccumArg ? args[preset.gradAccumArg] : undefined;
  return typeof value === "number" ? value : undefined;
}

function metricsSpec(
  metrics: Experiment["trainer"]["metrics"],
  preset: PresetDescriptor | undefined,
  vars: Record<string, string>,
  baseDir: string,
): MetricsSpec {
  const raw = metrics?.path ? interpolate(metrics.path, vars) : vars.metrics_file;
  const spec: MetricsSpec = {
    path: isAbsolute(raw) ? raw : resolve(baseDir, raw),
    format: metrics?.format ?? preset?.metricsFormat ?? DEFAULT_METRICS_FORMAT,
  };
  if (metrics?.pattern !== undefined) spec.pattern = metrics.pattern;
  if (metrics?.step_unit !== undefined) spec.step_unit = metrics.step_unit;
  if (metrics?.samples_per_step !== undefined) spec.samples_per_step = metrics.samples_per_step;
  if (metrics?.loss !== undefined) spec.loss = metrics.loss;
  return spec;
}

/** argv and env with every path placeholder's value replaced by a token naming it. */
function keyedCommand(
  argv: string[],
  env: Record<string, string>,
  vars: Record<string, string>,
): { argv: string[]; env: Record<string, string> } {
  // Longest first, so a folder never replaces the head of a longer path inside it.
  const swaps = PATH_VARS.filter((k) => vars[k]).map((k) => [vars[k], `<${k}>`] as const)
    .sort((a, b) => b[0].length - a[0].length);
  const swap = (s: string) => swaps.reduce((out, [from, to]) => out.replaceAll(from, to), s);
  return {
    argv: argv.map(swap),
    env: Object.fromEntries(Object.entries(env).map(([k, v]) => [k, swap(v)])),
  };
}
