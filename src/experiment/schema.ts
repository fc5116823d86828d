/**
 * The experiment file schema (zod 4). Every object is strict, so a misspelt key is an error
 * that names its path. Cross-field rules (save_at < steps, phase names in `compare`, reference
 * arguments, placeholders) run in {@link ExperimentSchema}'s refinement so that all problems of
 * one file are reported together.
 *
 * @module
 */

import { z } from "zod";

/** Faults the reference trainer can inject (see docs/reference-trainer.md). */
export const REFERENCE_FAULTS = [
  "skip-rng-restore",
  "skip-scheduler-restore",
  "skip-sampler-restore",
  "reset-adam-step",
  "drop-exp-avg-sq",
  "master-from-bf16",
  "mid-accumulation-save",
  "converter-transpose",
  "replica-drift",
  "save-perturbs-rng",
] as const;

const positiveInt = z.int("expected an integer").positive("expected a positive integer");
const scalar = z.union([z.string(), z.number(), z.boolean()]);

/** AutoEP placement descriptor (validated in depth by the trainer and src/affine). */
const PlacementSchema = z.object({
  version: z.literal(1),
  num_experts: positiveInt,
  ep_size: positiveInt,
  ranks: z.array(
    z.object({ rank: z.int().nonnegative(), experts: z.array(z.int().nonnegative()) }).strict(),
  ),
}).strict();

/**
 * Arguments of a trainer. For the `reference` preset the known keys become flags
 * (`world_size` → `--world-size`) and any other key is an error; for a `command` trainer every
 * key is available to templates as `${args.<key>}`.
 */
export const TrainerArgsSchema = z.object({
  world_size: positiveInt.optional().describe("data-parallel ranks"),
  ep_size: positiveInt.optional().describe("expert-parallel ranks (divides world_size)"),
  placement: z.union([PlacementSchema, z.string()]).optional()
    .describe("AutoEP placement descriptor, or a path to one"),
  zero_stage: z.union([z.literal(1), z.literal(2), z.literal(3)], "expected 1, 2 or 3").optional(),
  precision: z.enum(["fp32", "bf16"]).optional(),
  grad_accum: positiveInt.optional().describe("micro-batches per optimizer step"),
  fault: z.string().optional().describe("inject one named resume bug (reference trainer)"),
}).catchall(scalar);

/** How metrics are read from a trainer. */
export const MetricsSchema = z.object({
  format: z.enum(["jsonl", "deepspeed-csv", "log", "tensorboard"]).default("jsonl"),
  path: z.string().optional().describe("file or folder template; default ${metrics_file}"),
  pattern: z.string().optional().describe("log format: regex with named groups step and loss"),
  step_unit: z.enum(["step", "samples"]).default("step")
    .describe("deepspeed-csv: what the step column counts"),
  samples_per_step: positiveInt.optional().describe("deepspeed-csv with samples: global batch"),
}).strict();

/** Flaky-infrastructure retries. */
export const RetrySchema = z.object({
  attempts: z.int().min(1).max(10),
  on: z.array(z.string()).min(1).describe("regexes matched against the log tail"),
}).strict();

/** A trainer, converter or planner: a `preset` or a `command` argv template. */
export const ProcessSchema = z.object({
  preset: z.literal("reference").optional(),
  command: z.array(z.string()).min(1, "expected at least the program").optional(),
  args: TrainerArgsSchema.optional(),
  env: z.record(z.string(), z.string()).optional(),
  cwd: z.string().optional(),
  timeout: z.number().positive("expected a positive number of seconds").default(3600),
  metrics: MetricsSchema.optional(),
  code_inputs: z.array(z.string()).optional()
    .describe("files, folders or `!command` whose content joins the phase cache key"),
  retry: RetrySchema.optional(),
}).strict();

const phaseSuffix = z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, "lowercase letters, digits, - and _");

/** One resume of the split checkpoint. */
export const ResumeSchema = z.object({
  from: z.enum(["native", "universal"]),
  args: TrainerArgsSchema.optional().describe("topology overrides for this resume"),
  env: z.record(z.string(), z.string()).optional(),
  lane: z.enum(["exact", "tolerance"]).optional()
    .describe("lane against the baseline; default exact on the saved topology, else tolerance"),
}).strict();

/** Tolerance lane settings. */
export const ToleranceSchema = z.object({
  rtol: z.number().nonnegative().default(1e-4),
  atol: z.number().nonnegative().default(0),
  max_failures: z.int().nonnegative().default(0),
}).strict();

/** Settings of `tolerance: auto` (Megatron's compute_golden_statistics rule). */
export const AutoToleranceSchema = z.object({
  auto: z.literal(true),
  multiplier: z.number().positive().default(1.5),
  floor: z.number().nonnegative().default(1e-3),
  atol: z.number().nonnegative().default(0),
  max_failures: z.int().nonnegative().default(0),
}).strict();

/** An explicit comparison. */
export const CompareSchema = z.object({
  name: z.string().optional(),
  a: z.string(),
  b: z.string(),
  metric: z.string().default("loss"),
  lane: z.enum(["exact", "tolerance"]).default("exact"),
  window: z.object({ from: positiveInt, to: positiveInt }).strict().optional(),
  rtol: z.number().nonnegative().optional(),
  atol: z.number().nonnegative().optional(),
  max_failures: z.int().nonnegative().optional(),
}).strict();

/** Plan sync: drive the planner for each policy, verify, optionally resume through the plan. */
export const PlanSyncSchema = z.object({
  target: TrainerArgsSchema.describe(
    "target topology (world_size, ep_size, placement, zero_stage)",
  ),
  policies: z.array(z.string().regex(/^[a-z0-9_]+$/, "policy names are lowercase_with_underscores"))
    .min(1),
  resume: z.boolean().default(true).describe("add resume-plan-<policy> phases"),
  element_size: positiveInt.default(4).describe("bytes per element for plan statistics"),
}).strict();

/** The experiment file. */
export const ExperimentObjectSchema = z.object({
  $schema: z.string().optional(),
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, "letters, digits, '.', '_' and '-'"),
  description: z.string().optional(),
  seed: z.int().nonnegative().default(1234),
  schedule: z.object({
    steps: positiveInt.describe("optimizer steps of the full schedule"),
    save_at: positiveInt.describe("optimizer step after which the split phase saves"),
  }).strict(),
  trainer: ProcessSchema,
  converter: ProcessSchema.optional(),
  planner: ProcessSchema.optional(),
  resume: z.record(phaseSuffix, ResumeSchema).default({}),
  plan_sync: PlanSyncSchema.optional(),
  noise_floor: z.object({ repeats: z.int().min(0).max(16).default(0) }).strict().default({
    repeats: 0,
  }),
  tolerance: z.union([ToleranceSchema, AutoToleranceSchema]).optional(),
  metrics: z.array(z.string()).min(1).default(["loss"]).describe("metrics compared by default"),
  compare: z.array(CompareSchema).optional(),
  parallel: positiveInt.default(1).describe("phases run at once"),
  keep_checkpoints: z.enum(["all", "last", "none"]).default("all"),
  charts: z.object({
    log_scale: z.boolean().default(false),
    max_points: positiveInt.default(2000).describe("display downsampling; never used for judging"),
  }).strict().default({ log_scale: false, max_points: 2000 }),
  matrix: z.record(z.string(), z.array(scalar).min(1, "expected at least one value")).optional(),
}).strict();

/** Parsed experiment (defaults filled in). */
export type Experiment = z.output<typeof ExperimentObjectSchema>;
/** One trainer/converter/planner entry. */
export type ProcessEntry = z.output<typeof ProcessSchema>;
/** Trainer arguments. */
export type TrainerArgs = z.output<typeof TrainerArgsSchema>;
/** One resume entry. */
export type ResumeEntry = z.output<typeof ResumeSchema>;
/** One explicit comparison. */
export type CompareEntry = z.output<typeof CompareSchema>;
