/**
 * The experiment file schema (zod 4). Every object is strict, so a misspelt key is an error
 * that names its path. Cross-field rules (save_at < steps, phase names in `compare`, reference
 * arguments, placeholders) live in `rules.ts` and run after this schema, so that all problems of
 * one file are reported together (see {@link ExperimentObjectSchema}).
 *
 * @module
 */

import { z } from "zod";
import { CHECKPOINT_FORMATS, PRESET_NAMES } from "../presets/mod.ts";
import {
  AUTO_TOLERANCE_DEFAULTS,
  CHART_DEFAULTS,
  type CompareSpec,
  DEFAULT_ELEMENT_SIZE,
  DEFAULT_METRIC,
  DEFAULT_METRICS_FORMAT,
  DEFAULT_PHASE_TIMEOUT_S,
  DRIFT_DEFAULTS,
  LANES,
  TOLERANCE_DEFAULTS,
} from "../types/mod.ts";

const positiveInt = z.int("expected a positive integer").positive("expected a positive integer");
const nonNegativeInt = z.int("expected a non-negative integer")
  .nonnegative("expected a non-negative integer");
const nonNegativeNumber = z.number("expected a number").nonnegative("expected a number >= 0");
const scalar = z.union(
  [z.string(), z.number(), z.boolean()],
  "expected a string, number or boolean",
);
const envName = z.string().regex(
  /^[A-Za-z_][A-Za-z0-9_]*$/,
  "expected an environment variable name (letters, digits and _, not starting with a digit)",
);
const envMap = z.record(envName, z.string('expected a string (quote numbers: "1")'));

/** AutoEP placement descriptor (validated in depth by the trainer and src/affine). */
const PlacementSchema = z.object({
  version: z.literal(1, "expected 1 (AutoEP placement descriptor version)"),
  num_experts: positiveInt.describe("global number of experts E"),
  ep_size: positiveInt.describe("expert-parallel ranks P; `ranks` has exactly P entries"),
  ranks: z.array(
    z.object({
      rank: nonNegativeInt.describe("EP-local rank in [0, ep_size)"),
      experts: z.array(nonNegativeInt).describe("global expert ids in local packed order"),
    }).strict(),
  ).describe("one entry per EP rank; an expert on several ranks is replicated"),
}).strict().describe(
  "AutoEP placement descriptor: {version: 1, num_experts, ep_size, ranks: [{rank, experts}]}",
);

/**
 * Arguments of a trainer. For a preset the keys its descriptor declares become flags
 * (`world_size` → `--world-size`) and any other key is an error; for a `command` trainer every
 * key is available to templates as `${args.<key>}`.
 */
export const TrainerArgsSchema = z.object({
  world_size: positiveInt.optional().describe("data-parallel ranks").meta({ examples: [4] }),
  ep_size: positiveInt.optional().describe("expert-parallel ranks (divides world_size)")
    .meta({ examples: [2] }),
  placement: z.union(
    [PlacementSchema, z.string()],
    "expected a placement mapping {version, num_experts, ep_size, ranks} or a path to one",
  ).optional()
    .describe("AutoEP placement descriptor, or a path to one"),
  zero_stage: z.union(
    [z.literal(0), z.literal(1), z.literal(2), z.literal(3)],
    "expected 0, 1, 2 or 3",
  ).optional().describe("ZeRO stage"),
  precision: z.enum(["fp32", "bf16"]).optional().describe("module weight precision"),
  grad_accum: positiveInt.optional().describe("micro-batches per optimizer step"),
  fault: z.string().optional().describe("inject one named resume bug (the preset's faults)")
    .meta({ examples: ["skip-rng-restore"] }),
}).catchall(
  z.union(
    [scalar, z.array(z.string("expected a string"))],
    "expected a string, number, boolean or list of strings",
  ),
).describe(
  "trainer arguments: preset flags (the hf preset's script and lists of its arguments), or " +
    "values for ${args.<key>} in command templates (a list as JSON text)",
);

/** How metrics are read from a trainer. */
export const MetricsSchema = z.object({
  format: z.enum(["jsonl", "deepspeed-csv", "log", "tensorboard"]).default(DEFAULT_METRICS_FORMAT)
    .describe("metrics source format"),
  path: z.string().optional().describe("file or folder template; default ${metrics_file}"),
  pattern: z.string().optional().describe("log format: regex with named groups step and loss")
    .meta({ examples: ["step (?<step>\\d+) loss (?<loss>\\S+)"] }),
  step_unit: z.enum(["step", "samples"]).optional()
    .describe("what the step column counts; deepspeed-csv defaults to samples, others to step"),
  samples_per_step: positiveInt.optional().describe("deepspeed-csv with samples: global batch"),
  loss: z.string().min(1, "expected a metric name").optional()
    .describe("the tag, column or JSONL key that is the loss, when it is not named loss")
    .meta({ examples: ["train/loss"] }),
}).strict().describe("where and how the phase's metrics are read");

/** Flaky-infrastructure retries. */
export const RetrySchema = z.object({
  attempts: z.int("expected an integer from 1 to 10").min(1, "expected at least 1")
    .max(10, "expected at most 10").describe("total attempts, the first included"),
  on: z.array(z.string().min(1, "expected a non-empty regex")).min(1, "expected at least one regex")
    .describe("regexes matched against the log tail").meta({ examples: [["NCCL timeout"]] }),
}).strict().describe("re-run a phase whose log tail matches (never a parity failure)");

/** Where phases run: local children (default) or Slurm batch jobs (docs/slurm.md). */
export const ExecutorSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("local") }).strict(),
  z.object({
    kind: z.literal("slurm"),
    partition: z.string().min(1).optional().describe("sbatch --partition"),
    nodes: positiveInt.optional().describe("sbatch --nodes"),
    gpus_per_node: nonNegativeInt.optional().describe("sbatch --gpus-per-node"),
    time: z.string().regex(
      /^(\d+-)?\d+(:\d+){0,2}$/,
      "expected a Slurm time limit: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS",
    ).optional().describe("sbatch --time; default the phase timeout rounded up to minutes"),
    account: z.string().min(1).optional().describe("sbatch --account"),
    qos: z.string().min(1).optional().describe("sbatch --qos"),
    extra_args: z.array(z.string()).default([])
      .describe("more sbatch options, one argv element each").meta({
        examples: [["--exclusive", "--constraint=a100"]],
      }),
    poll: z.number("expected a number of seconds").positive("expected a positive number")
      .default(2).describe("seconds between two looks at the job's state"),
    srun: z.boolean().optional().describe(
      "run the phase's command under srun (a launcher per node); default true for launcher " +
        "presets (deepspeed), else false",
    ),
    max_jobs: positiveInt.default(4).describe("independent phases queued at once"),
  }).strict(),
], "expected {kind: local} or {kind: slurm, ...}").describe(
  "where phases run: local child processes or Slurm batch jobs",
);

/** A trainer, converter or planner: a `preset` or a `command` argv template. */
export const ProcessSchema = z.object({
  preset: z.enum(PRESET_NAMES).optional()
    .describe("built-in program expanded into a command line (exclusive with command)"),
  command: z.array(z.string("expected a string (argv entries are strings)"))
    .min(1, "expected at least the program")
    .refine((argv) => argv[0].trim() !== "", {
      message: "expected the program to run, got an empty string",
      path: [0],
    }).optional()
    .describe("argv template with ${placeholders}; never passed through a shell")
    .meta({ examples: [["python", "train.py", "--steps", "${steps}"]] }),
  args: TrainerArgsSchema.optional(),
  env: envMap.optional().describe("extra environment; values may use ${placeholders}"),
  cwd: z.string().optional().describe("working folder template"),
  timeout: z.number("expected a number of seconds").positive(
    "expected a positive number of seconds",
  )
    .default(DEFAULT_PHASE_TIMEOUT_S).describe("seconds before the process group is stopped"),
  metrics: MetricsSchema.optional(),
  checkpoint_marker: z.string().min(1).optional()
    .describe(
      "file inside the saved tag folder that proves the save completed (default: the preset's)",
    ),
  checkpoint_format: z.enum(CHECKPOINT_FORMATS).optional()
    .describe(
      "trainer only: the layout its checkpoints are written in (deepspeed); the harness reads " +
        "the split's tag folder and the converter's universal folder back with the trainer's " +
        "Python and checks what they hold against the saved digests (default: the preset's)",
    ),
  checkpoint_tag: z.string().min(1).optional()
    .describe("tag folder the split saves under the checkpoint root; default global_step${save_at}")
    .meta({ examples: ["global_step${save_at}"] }),
  topology_args: z.array(z.string().min(1)).optional()
    .describe(
      "trainer args that define the topology (a change is a reshard); default the preset's, " +
        "or world_size, ep_size, autoep_size, placement, zero_stage, tp_size, pp_size",
    ),
  code_inputs: z.array(z.string().min(1, "expected a non-empty string")).optional()
    .describe("files, folders or `!command` whose content joins the phase cache key"),
  retry: RetrySchema.optional(),
  executor: ExecutorSchema.optional().describe(
    "this program's phases run here (overrides the experiment's)",
  ),
}).strict().describe("a program: `preset: reference` or a `command` argv template");

/** Longest resume or policy name: it becomes a folder name under `phases/`. */
export const MAX_PHASE_SUFFIX_CHARS = 64;
/** Longest experiment name in the file (matrix suffixes are checked after expansion). */
export const MAX_EXPERIMENT_NAME_CHARS = 120;
/** Longest compare name: it becomes a chart file name. */
export const MAX_COMPARE_NAME_CHARS = 100;

const phaseSuffix = z.string().regex(
  /^[a-z0-9][a-z0-9_-]*$/,
  "expected lowercase letters, digits, '-' and '_', starting with a letter or digit",
).max(MAX_PHASE_SUFFIX_CHARS, `expected at most ${MAX_PHASE_SUFFIX_CHARS} characters`);

/** Most LR errors one resume's `sensitivity` may try (each is one more resume phase). */
export const MAX_CALIBRATIONS = 6;

/**
 * Calibration of a resume's lane (docs/parity.md, "Sensitivity"): one extra resume per LR error,
 * phase `calibrate-<name>-lr<error>`, whose LR is scaled by `1 + error` from the first resumed step.
 */
export const SensitivitySchema = z.object({
  lr_error: z.array(
    z.number("expected a number").positive("expected a number > 0").max(
      0.5,
      "expected at most 0.5",
    ),
    "expected a list of relative LR errors",
  ).min(1, "expected at least one LR error").max(
    MAX_CALIBRATIONS,
    `expected at most ${MAX_CALIBRATIONS} LR errors`,
  ).refine((xs) => new Set(xs).size === xs.length, "expected distinct LR errors")
    .describe("relative LR errors to try, e.g. [1e-4, 1e-3, 1e-2] (LR × 1.0001, 1.001, 1.01)"),
}).strict().describe("what the lane of this resume would have caught");

/** One resume of the split checkpoint. */
export const ResumeSchema = z.object({
  from: z.enum(["native", "universal"]).describe("checkpoint kind to resume from"),
  from_step: positiveInt.optional()
    .describe("saved step to resume from, one of schedule.save_at; default the last save"),
  args: TrainerArgsSchema.optional().describe("topology overrides for this resume"),
  env: envMap.optional().describe("extra environment for this resume"),
  lane: z.enum(LANES).optional()
    .describe("lane against the baseline; default exact on the saved topology, else drift"),
  lane_reason: z.string().optional().describe("why `lane` is set (shown in the report)"),
  executor: ExecutorSchema.optional().describe("where this resume runs (overrides the trainer's)"),
  sensitivity: SensitivitySchema.optional()
    .describe("calibration resumes measuring what this resume's lane can detect"),
}).strict().describe("one resume of the split checkpoint: phase resume-<name>");

/** Tolerance lane settings. */
export const ToleranceSchema = z.object({
  rtol: nonNegativeNumber.default(TOLERANCE_DEFAULTS.rtol).describe("relative tolerance"),
  atol: nonNegativeNumber.default(TOLERANCE_DEFAULTS.atol).describe("absolute tolerance"),
  max_failures: nonNegativeInt.default(TOLERANCE_DEFAULTS.max_failures)
    .describe("steps allowed outside the tolerance"),
}).strict().describe("fixed tolerance lane settings");

/** Thresholds of the drift lane (docs/parity.md, "The drift lane"); unset keys keep defaults. */
export const DriftSchema = z.object({
  early_steps: positiveInt.optional().describe(
    `resumed steps judged tightly (default ${DRIFT_DEFAULTS.early_steps})`,
  ),
  early_ulp: z.number("expected a number").positive("expected a positive number").optional()
    .describe(`allowed early |b - a| in float32 ULPs of a (default ${DRIFT_DEFAULTS.early_ulp})`),
  envelope: z.number("expected a number").positive("expected a positive number").optional()
    .describe(
      `allowed later |b - a| over the median step-to-step change of a (default ${DRIFT_DEFAULTS.envelope})`,
    ),
  blocks: z.int("expected an integer").min(2, "expected at least 2").optional()
    .describe(`blocks of the bias test (default ${DRIFT_DEFAULTS.blocks})`),
  bias_t: z.number("expected a number").positive("expected a positive number").optional()
    .describe(`largest |t| of the block means of b - a (default ${DRIFT_DEFAULTS.bias_t})`),
}).strict().describe("drift lane thresholds");

/** Settings of `tolerance: auto` (Megatron's compute_golden_statistics rule). */
export const AutoToleranceSchema = z.object({
  auto: z.literal(true, "expected true"),
  multiplier: z.number("expected a number").positive("expected a positive number")
    .default(AUTO_TOLERANCE_DEFAULTS.multiplier)
    .describe("rtol = max(max relative deviation of the repeats × multiplier, floor)"),
  floor: nonNegativeNumber.default(AUTO_TOLERANCE_DEFAULTS.floor)
    .describe("lower bound of the derived rtol"),
  atol: nonNegativeNumber.default(AUTO_TOLERANCE_DEFAULTS.atol),
  max_failures: nonNegativeInt.default(AUTO_TOLERANCE_DEFAULTS.max_failures),
}).strict().describe("tolerance derived from the noise floor");

/** An explicit comparison. */
export const CompareSchema = z.object({
  name: z.string().max(
    MAX_COMPARE_NAME_CHARS,
    `expected at most ${MAX_COMPARE_NAME_CHARS} characters`,
  ).optional().describe("display name; default a~b"),
  a: z.string().describe("reference phase").meta({ examples: ["baseline"] }),
  b: z.string().describe("compared phase").meta({ examples: ["resume-native"] }),
  metric: z.string().default(DEFAULT_METRIC),
  lane: z.enum(LANES).default("exact"),
  window: z.object({
    from: positiveInt.describe("first step"),
    to: positiveInt.describe("last step (<= schedule.steps)"),
  }).strict().optional().describe("steps compared; default the steps both phases logged"),
  rtol: nonNegativeNumber.optional(),
  atol: nonNegativeNumber.optional(),
  max_failures: nonNegativeInt.optional(),
}).strict().describe("an explicit comparison of two phases");

/** Plan sync: drive the planner for each policy, verify, optionally resume through the plan. */
export const PlanSyncSchema = z.object({
  target: TrainerArgsSchema.describe(
    "target topology (world_size, ep_size, placement, zero_stage)",
  ),
  policies: z.array(
    z.string().regex(/^[a-z0-9_]+$/, "expected a policy name in lowercase_with_underscores")
      .max(MAX_PHASE_SUFFIX_CHARS, `expected at most ${MAX_PHASE_SUFFIX_CHARS} characters`),
  ).min(1, "expected at least one policy")
    .describe("one plan-<policy> phase each").meta({ examples: [["first_holder", "balanced"]] }),
  resume: z.boolean().default(true).describe("add resume-plan-<policy> phases"),
  execute: z.boolean().default(false).describe(
    "add execute-plan-<policy> phases: run each plan on the checkpoint's bytes and compare, " +
      "per process and expert slot, with the universal resume on the target topology",
  ),
  element_size: positiveInt.max(64, "expected at most 64 bytes per element").default(
    DEFAULT_ELEMENT_SIZE,
  )
    .describe("bytes per element for plan statistics"),
}).strict().describe("plan-path resharding through the affine planner");

/** The experiment file. */
export const ExperimentObjectSchema = z.object({
  $schema: z.string().optional().describe("JSON Schema reference for editors"),
  name: z.string().regex(
    /^[A-Za-z0-9][A-Za-z0-9_.-]*$/,
    "expected letters, digits, '.', '_' and '-', starting with a letter or digit",
  ).max(MAX_EXPERIMENT_NAME_CHARS, `expected at most ${MAX_EXPERIMENT_NAME_CHARS} characters`)
    .describe("experiment name: results/<name>/").meta({ examples: ["quickstart"] }),
  description: z.string().optional(),
  seed: nonNegativeInt.default(1234),
  schedule: z.object({
    steps: positiveInt.describe("optimizer steps of the full schedule"),
    save_at: z.union(
      [positiveInt, z.array(positiveInt).min(1, "expected at least one step")],
      "expected a positive integer or a list of them",
    ).describe(
      "step after which the split phase saves (< steps), or ascending distinct steps it saves " +
        "after in one run, stopping after the last (e.g. [3, 6])",
    ).meta({ examples: [20, [3, 6]] }),
    grad_accum: positiveInt.optional()
      .describe("micro-batches per optimizer step; default the preset's grad argument, else 1"),
    step_unit: z.enum(["optimizer", "micro_batch"]).default("optimizer")
      .describe("what steps and save_at count: optimizer steps or micro-batches"),
    split: z.enum(["separate", "fused"]).default("separate")
      .describe(
        "separate: a split phase re-trains to save_at and saves; fused: the baseline saves at " +
          "save_at and continues, and the resumes start from its checkpoint (docs/experiment-files.md)",
      ),
  }).strict(),
  trainer: ProcessSchema,
  converter: ProcessSchema.optional()
    .describe("universal converter; default the trainer's preset when it has one"),
  planner: ProcessSchema.optional()
    .describe("plan_sync planner; default the trainer's preset when it has one"),
  resume: z.record(phaseSuffix, ResumeSchema).default({}).describe("resumes by name"),
  plan_sync: PlanSyncSchema.optional(),
  noise_floor: z.object({
    repeats: z.int("expected an integer from 0 to 16").min(0, "expected at least 0")
      .max(16, "expected at most 16").default(0)
      .describe("baseline-repeat-<k> phases measuring run-to-run noise"),
  }).strict().default({ repeats: 0 }),
  tolerance: z.union([ToleranceSchema, AutoToleranceSchema]).optional()
    .describe("tolerance lane defaults"),
  drift: DriftSchema.optional().describe("drift lane thresholds (resumes on another topology)"),
  metrics: z.array(z.string()).min(1, "expected at least one metric").default([DEFAULT_METRIC])
    .describe("metrics compared by default"),
  compare: z.array(CompareSchema).optional(),
  golden: z.boolean("expected true or false").optional()
    .describe(
      "judge the baseline against the stored golden of this environment " +
        "(experiments/goldens/<experiment>/<environment-key>.jsonl)",
    ),
  parallel: positiveInt.default(1).describe("phases run at once (without devices)"),
  devices: z.object({
    kind: z.enum(["cuda", "cpu"]).describe("GPUs or CPU cores"),
    ids: z.array(nonNegativeInt).min(1, "expected at least one device id")
      .refine((ids) => new Set(ids).size === ids.length, "expected distinct device ids")
      .describe("device ids phases share; each phase takes its world size of them"),
  }).strict().optional()
    .describe("the node's devices: independent phases run at once while devices last")
    .meta({ examples: [{ kind: "cuda", ids: [0, 1, 2, 3, 4, 5, 6, 7] }] }),
  executor: ExecutorSchema.default({ kind: "local" })
    .describe("where phases run (a program or resume may override it)"),
  keep_checkpoints: z.enum(["all", "last", "none"]).default("all")
    .describe("which checkpoints stay on disk after the run"),
  charts: z.object({
    log_scale: z.boolean().default(CHART_DEFAULTS.log_scale),
    max_points: positiveInt.default(CHART_DEFAULTS.max_points)
      .describe("display downsampling; never used for judging"),
  }).strict().default({ ...CHART_DEFAULTS }),
  matrix: z.record(z.string(), z.array(z.unknown()).min(1, "expected at least one value"))
    .optional()
    .describe("dotted.path -> values; one experiment per combination, named name[k=v,...]")
    .meta({ examples: [{ "trainer.args.zero_stage": [1, 2, 3] }] }),
}).strict();

/** Parsed experiment (defaults filled in). */
export type Experiment = z.output<typeof ExperimentObjectSchema>;
/** One trainer/converter/planner entry. */
export type ProcessEntry = z.output<typeof ProcessSchema>;
/** Trainer arguments. */
export type TrainerArgs = z.output<typeof TrainerArgsSchema>;
/** One resume entry. */
export type ResumeEntry = z.output<typeof ResumeSchema>;
/** Where phases run. */
export type ExecutorEntry = z.output<typeof ExecutorSchema>;
/** One explicit comparison: the resolved plan's {@link CompareSpec}. */
export type CompareEntry = z.output<typeof CompareSchema>;

// `CompareSpec` (src/types, which may not import zod's schema) is this schema's output type; the
// compiler refuses a change to one that the other does not follow.
type _Equal<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _compareSpecIsSchemaOutput: _Equal<CompareEntry, CompareSpec> = true;
void _compareSpecIsSchemaOutput;
