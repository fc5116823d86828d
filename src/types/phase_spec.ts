/**
 * The resolved phase plan: what `experiment/` compiles a validated experiment file into, once,
 * and what the runner, the cache, the judge and `parity plan` read. Nothing downstream of the
 * plan re-reads the raw experiment. Plain data only, so every layer may import it.
 *
 * @module
 */

import type { Diagnostic, PhaseRole } from "./summary.ts";
import type { ChartSettings, JudgeSettings, Lane } from "./judge_settings.ts";

export type { CompareSpec, DriftSpec, Lane, ToleranceSpec } from "./judge_settings.ts";

/** Which configured program runs a phase. */
export type PhaseTool = "trainer" | "converter" | "planner" | "executor";

/** How a training phase starts. */
export type ResumeKind = "native" | "universal" | "plan";

/** Metrics file formats the readers know. */
export type MetricsFormat = "jsonl" | "deepspeed-csv" | "log" | "tensorboard";

/** Where a phase's metrics are read from and how. */
export interface MetricsSpec {
  /** File or folder (absolute). */
  path: string;
  /** Reader format. */
  format: MetricsFormat;
  /** `log`: regex with named groups `step` and `loss`. */
  pattern?: string;
  /** What the step column counts. */
  step_unit?: "step" | "samples";
  /** `samples`: the global batch, to turn samples into steps. */
  samples_per_step?: number;
  /** The metric (tag, column or JSONL key) that is the loss, when it is not named `loss`. */
  loss?: string;
}

/** Where a phase's artifacts live (all inside the run folder) and what it reads. */
export interface PhasePaths {
  /** `<run>/phases/<phase>`. */
  dir: string;
  /** Metrics JSONL the trainer appends to (`${metrics_file}`). */
  metricsFile: string;
  /**
   * The phase's own output folder, `<run>/phases/<phase>/checkpoints` (`${output_dir}`; trainer
   * phases only): where it may save. The split's is its {@link checkpointDir}.
   */
  outputDir?: string;
  /** Checkpoint root (`global_step<N>/` and `latest` inside). */
  checkpointDir?: string;
  /** The split's checkpoint tag folder (what the split must leave, converters and planners read). */
  checkpointTag?: string;
  /**
   * Split with several saves (`schedule.save_at: [3, 6]`): every tag folder it must leave, by
   * save step, ascending; the last is {@link checkpointTag}.
   */
  checkpointTags?: { step: number; dir: string }[];
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
  /**
   * Per-process expert state: what a trainer holds right after its load, or what a plan
   * executor built from the checkpoint's bytes (`process_state.json`; docs/plan-sync.md).
   */
  stateFile?: string;
}

/**
 * A calibration phase: a resume repeated with its learning rate scaled by `1 + lr_error` from
 * the first resumed step, to measure what its lane against the baseline can detect.
 */
export interface Calibration {
  /** The resume phase it repeats (`resume-<name>`). */
  of: string;
  /** Relative LR error applied on resume (`1e-3` = LR × 1.001). */
  lr_error: number;
}

/** Why a resume is judged in its lane against the baseline. */
export interface LaneChoice {
  /** The lane. */
  lane: Lane;
  /** One sentence: declared in the file, or same/different declared topology. */
  reason: string;
}

/** The checkpoint reader's document in a split's or convert phase's folder ({@link PhaseSpec.readBack}). */
export const CHECKPOINT_FILES_DOCUMENT = "checkpoint_files.json";

/** One phase, fully resolved: a child process ready to launch and everything judged about it. */
export interface PhaseSpec {
  /** Unique phase name: `baseline`, `split`, `convert`, `resume-<name>`, `plan-<policy>`... */
  name: string;
  /** What the phase does. */
  role: PhaseRole;
  /** Program that runs it. */
  tool: PhaseTool;
  /** Phases whose outputs it needs (all must end ok first). */
  consumes: string[];
  /** Last optimizer step this phase runs (the save step for convert and plan phases). */
  stopAt: number;
  /** How a resume phase loads its checkpoint. */
  resumeKind?: ResumeKind;
  /**
   * Resumes and calibrations: the saved step they load (`resume.<name>.from_step`, default the
   * last save); they run `fromStep + 1 .. steps`. Convert: the saved step it converts. Set only
   * with several saves (`schedule.save_at: [3, 6]`); absent means the last save.
   */
  fromStep?: number;
  /** Split: the steps it saves after, ascending (it stops after the last). */
  saveSteps?: number[];
  /** Replica policy of plan phases. */
  policy?: string;
  /** Program arguments in force (trainer.args merged with the phase's overrides). */
  args: Record<string, unknown>;
  /** The declared topology arguments and their values. */
  topology: Record<string, unknown>;
  /** Canonical JSON of {@link topology}; equal keys mean the same topology. */
  topologyKey: string;
  /** Resumes: the lane against the baseline and why. */
  lane?: LaneChoice;
  /** Calibration phases: the resume they repeat with a known LR error (docs/parity.md). */
  calibration?: Calibration;
  /** Micro-batches per optimizer step, when declared. */
  gradAccum?: number;
  /** Program and arguments (never passed through a shell). */
  argv: string[];
  /** Variables set on top of the harness's own environment. */
  env: Record<string, string>;
  /** Working folder. */
  cwd: string;
  /** Seconds before the process group is stopped. */
  timeoutS: number;
  /** The cache's view of argv and env: every run-folder path replaced by a token. */
  keyed: { argv: string[]; env: Record<string, string> };
  /** Artifact paths. */
  paths: PhasePaths;
  /** Training phases: where their metrics are read. */
  metrics?: MetricsSpec;
  /** Split: file inside the tag folder that proves the save completed. */
  checkpointMarker?: string;
  /**
   * Split and convert, when the trainer names a checkpoint format: the reader the harness runs
   * after the phase on its checkpoint folder (`argv`, in the trainer's Python environment), and
   * where its JSON document goes (`out`, in the phase folder).
   */
  readBack?: { argv: string[]; out: string };
  /** Files, folders or `!commands` whose content joins the cache key. */
  codeInputs: string[];
  /** Flaky-infrastructure retries. */
  retry?: { attempts: number; on: string[] };
  /** Planner phases: the target topology document written to `paths.target`. */
  target?: Record<string, unknown>;
  /** Where it runs, resolved once (`executor: {kind: local}` unless the file says otherwise). */
  executor: ExecutorSpec;
  /** With a device pool (`devices:`): how many of its devices the phase takes (0: none). */
  devices?: number;
}

/**
 * Where a phase runs: one member per executor in `src/executors/registry.ts`, told apart by
 * `kind` (a new executor adds its settings here; see that module).
 */
export type ExecutorSpec = LocalExecutorSpec | SlurmExecutorSpec;

/** A phase run as a local child process in its own process group (the default). */
export interface LocalExecutorSpec {
  /** Always `local`. */
  kind: "local";
}

/** A phase run as a Slurm batch job (`executor: {kind: slurm}`; docs/slurm.md). */
export interface SlurmExecutorSpec {
  /** Always `slurm`. */
  kind: "slurm";
  /** `--partition`. */
  partition?: string;
  /** `--nodes`. */
  nodes?: number;
  /** `--gpus-per-node`. */
  gpusPerNode?: number;
  /** `--time` as Slurm reads it (`MM`, `HH:MM:SS`, `D-HH`); default the phase timeout, rounded up to minutes. */
  time?: string;
  /** `--account`. */
  account?: string;
  /** `--qos`. */
  qos?: string;
  /** More sbatch options, one argv element each (never through a shell). */
  extraArgs: string[];
  /** Seconds between two looks at the job's state. */
  pollS: number;
  /** Run the phase's argv under `srun` (one launcher per node, e.g. torchrun or deepspeed). */
  srun: boolean;
  /** Jobs in the queue at once (independent phases only). */
  maxJobs: number;
}

/**
 * What the judge needs besides the phases: the schedule and every judge setting resolved (the
 * experiment's, else the defaults of `src/types/defaults.ts`), none optional. The settings part is
 * persisted in summary.json as `judge`.
 */
export interface JudgeSpec extends JudgeSettings {
  /** Schedule length (optimizer steps). */
  steps: number;
  /** Optimizer step after which the split saves last (and stops). */
  saveAt: number;
  /** Every step after which the split saves, ascending (`[saveAt]` for one save). */
  saveSteps: number[];
}

/** How the report draws the run (`charts:`); never used for judging. */
export type ChartSpec = ChartSettings;

/** A pool of one node's devices: GPUs (`cuda`) or CPU cores (`cpu`) by id. */
export interface DevicePoolSpec {
  /** `cuda`: a phase gets `CUDA_VISIBLE_DEVICES`; `cpu`: `PARITY_CPUS` and `OMP_NUM_THREADS`. */
  kind: "cuda" | "cpu";
  /** Device ids (GPU indices or CPU core numbers), distinct. */
  ids: number[];
}

/**
 * An experiment compiled once. As resolved (and as written to the run folder's {@link PLAN_FILE})
 * every run-folder path starts with {@link RUN_FOLDER}; {@link placePlan} puts it in one folder.
 */
export interface ResolvedPlan {
  /** Experiment name (with matrix suffix). */
  experiment: string;
  /** The run folder every path lives in ({@link RUN_FOLDER} until the plan is placed). */
  runDir: string;
  /** Seed of every training phase. */
  seed: number;
  /** Phases run at once (without a device pool). */
  parallel: number;
  /**
   * The node's devices phases share (`devices:`): with a pool, a phase launches once its world
   * size of devices is free, instead of `parallel` bounding the run.
   */
  devices?: DevicePoolSpec;
  /** Which checkpoints stay after the run. */
  keepCheckpoints: "all" | "last" | "none";
  /** Phases in execution order. */
  phases: PhaseSpec[];
  /** How the run is judged. */
  judge: JudgeSpec;
  /** How the report draws it. */
  charts: ChartSpec;
  /** What the experiment leaves unchecked (warnings in the report and on the console). */
  warnings: Diagnostic[];
}

/**
 * Whether a phase writes the checkpoint the resumes, the converter and the planner read: the
 * split, or under `schedule.split: fused` the baseline (issue 37). Only that phase has a
 * checkpoint tag.
 */
export function savesCheckpoint(spec: { paths: { checkpointTag?: string } }): boolean {
  return spec.paths.checkpointTag !== undefined;
}

/** The resolved plan's file in a run folder (its run-folder paths under {@link RUN_FOLDER}). */
export const PLAN_FILE = "plan.json";

/**
 * What every run-folder path of a plan not yet placed starts with: the run folder itself, as a
 * token. It is absolute, so path joins and `resolve()` against the experiment's folder keep it
 * whole, and no real path or argument contains it.
 */
export const RUN_FOLDER = "/<run>";

/**
 * The plan with its run folder at `runDir`: {@link RUN_FOLDER} replaced in every string (paths,
 * argv, env, the cache's view). The one place a plan's paths meet a run folder.
 */
export function placePlan(plan: ResolvedPlan, runDir: string): ResolvedPlan {
  return placeValue(plan, plan.runDir, runDir) as ResolvedPlan;
}

function placeValue(value: unknown, from: string, to: string): unknown {
  if (typeof value === "string") return value.replaceAll(from, to);
  if (Array.isArray(value)) return value.map((v) => placeValue(v, from, to));
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, placeValue(v, from, to)]),
    );
  }
  return value;
}
