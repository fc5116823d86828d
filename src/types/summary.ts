/**
 * Types of `summary.json` (schema_version 1), the machine-readable result of one run. The
 * pipeline writes it; the report, history and suite renderers read only this file, `losses.csv`
 * and the phase logs, so every output can be re-rendered without retraining.
 *
 * @module
 */

import type { ChartSettings, JudgeSettings, Lane } from "./judge_settings.ts";

export type { ChartSettings, JudgeSettings } from "./judge_settings.ts";

/** Outcome of a comparison, a check or a whole run. */
export type Verdict = "PASS" | "FAIL" | "ABSTAIN" | "ERROR";

/** Status of one phase (contract values). */
export type PhaseStatus = "ok" | "failed" | "timeout" | "skipped";

/** What a phase does in the experiment. */
export type PhaseRole =
  | "baseline"
  | "split"
  | "resume"
  | "repeat"
  | "calibrate"
  | "convert"
  | "plan"
  | "execute";

/** One phase as recorded in the summary. */
export interface PhaseSummary {
  /** Phase name, e.g. `resume-native`. */
  name: string;
  /** What the phase does. */
  role: PhaseRole;
  /** How it ended. */
  status: PhaseStatus;
  /** Reused from an earlier completed phase with the same cache key. */
  cached: boolean;
  /** Wall time of the child process(es), seconds (0 when cached or skipped). */
  wall_s: number;
  /** Exit code of the last attempt, null when killed by a signal or never started. */
  exit_code: number | null;
  /** One-line reason when the phase did not end ok. */
  message?: string;
  /** Last lines of the phase's logs when it did not end ok. */
  log_tail?: string;
  /** Number of attempts (more than 1 after flaky-infrastructure retries). */
  attempts?: number;
  /** Attempts that failed and were retried: which `retry.on` pattern matched their log. */
  retries?: { attempt: number; matched: string; message: string }[];
  /** Cache key of the phase's inputs. */
  cache_key?: string;
  /** Phases whose outputs this phase consumes. */
  consumes?: string[];
  /** The run folder the artifacts live in when reused from an earlier run. */
  source_run?: string;
  /**
   * Reused from a run of another experiment in the same results folder (the same cache key:
   * the same inputs, by content): that experiment's folder name.
   */
  shared_from?: string;
  /** The devices of the pool it ran on (`devices:`). */
  devices?: PhaseDevices;
  /** Cached or shared: the wall time, seconds, the phase took where it ran (the bill's saving). */
  reused_wall_s?: number;
}

/** Devices of a pool that one phase ran on. */
export interface PhaseDevices {
  /** GPUs or CPU cores. */
  kind: "cuda" | "cpu";
  /** Their ids. */
  ids: number[];
}

/** One lane's judgement of metric `metric` between phases `a` and `b`. */
export interface ComparisonSummary {
  /** `a~b` or a user-given name. */
  name: string;
  /** Reference phase. */
  a: string;
  /** Candidate phase. */
  b: string;
  /** Metric compared (`loss` by default). */
  metric: string;
  /**
   * `exact` (bit equality), `tolerance` (rtol/atol with a failure budget) or `drift` (early
   * window, drift envelope and bias test: resumes on another topology).
   */
  lane: Lane;
  /** Why this lane: declared in the file, or same/different declared topology. */
  lane_reason?: string;
  /** Verdict of this comparison. */
  verdict: Verdict;
  /** First step of the window. */
  first_step: number | null;
  /** Last step of the window. */
  last_step: number | null;
  /** Steps compared. */
  compared: number;
  /** First step where the lane fails, null when none. */
  first_divergent_step: number | null;
  /** Last step before the first divergence (or the window end when none). */
  last_matching_step: number | null;
  /** Maximum |b - a| over the window. */
  max_abs: number | null;
  /** Mean |b - a| over the window. */
  mean_abs: number | null;
  /** Maximum |b - a| / |a| over the window. */
  max_rel: number | null;
  /** Maximum float64 ULP distance over the window. */
  max_ulp: number | null;
  /** Maximum float32 ULP distance when both sides are float32-representable. */
  max_ulp_f32?: number | null;
  /** Values of `a` and `b` at the first divergent step. */
  divergence?: { step: number; a: number | null; b: number | null } | null;
  /** Tolerance lane settings. */
  rtol?: number;
  /** Tolerance lane settings. */
  atol?: number;
  /** Failures allowed before the tolerance lane fails. */
  max_failures?: number;
  /** Steps outside tolerance (tolerance lane) or unequal (exact lane). */
  failures?: number;
  /** Why the verdict is what it is, in one sentence. */
  reason?: string;
  /** Window steps missing on either side (each one a failure). */
  missing_steps?: number;
  /** Window steps where either side is NaN or infinite (each one a failure). */
  non_finite?: number;
  /** Window steps where both sides are NaN or infinite: no evidence, ERROR unless something fails. */
  both_non_finite?: number;
  /** Window steps missing from both sides: no evidence, ERROR unless something fails. */
  both_missing?: number;
  /**
   * Stable codes of the evidence rules that set this verdict (docs/parity.md, "Evidence
   * rules"), e.g. `metrics-rounded`, `step-missing-both`; absent when the lane alone decided.
   */
  codes?: string[];
  /** Drift lane: what each of its three tests measured. */
  drift?: DriftSummary;
  /**
   * What this lane would have caught, measured by the calibration resumes of `b`
   * (`resume.<name>.sensitivity`; docs/parity.md, "Sensitivity"); absent without them.
   */
  sensitivity?: SensitivitySummary;
}

/** What a comparison's lane detects, measured on this experiment (docs/parity.md, "Sensitivity"). */
export interface SensitivitySummary {
  /** The known perturbation: the resumed LR scaled by `1 + lr_error`. */
  perturbation: "lr_scale";
  /** The calibrations, by increasing LR error. */
  tried: CalibrationResult[];
  /**
   * Smallest LR error from which every tried error FAILs the lane (with the error shown in the
   * logged LR where one is logged); null when the largest does not.
   */
  detects: number | null;
  /** Largest tried error below {@link detects} that the lane passed (null when none). */
  missed: number | null;
  /** One sentence: what a PASS of this comparison is worth. */
  statement: string;
}

/** One calibration resume judged in its resume's lane against the same reference. */
export interface CalibrationResult {
  /** The calibration phase (`calibrate-<name>-lr1e-3`). */
  phase: string;
  /** Relative LR error it applied. */
  lr_error: number;
  /** The lane's verdict on it (FAIL = detected). */
  verdict: Verdict;
  /** Where the lane saw it. */
  first_divergent_step: number | null;
  /** Drift lane: the test that caught it. */
  test?: DriftFailure["test"];
  /**
   * Whether its logged `lr` shows the error against the reference's (null: no `lr` logged, so
   * unverified). A calibration whose LR did not change proves nothing and is not counted.
   */
  applied: boolean | null;
}

/** What the drift lane measured (docs/parity.md, "The drift lane"). */
export interface DriftSummary {
  /** Steps of the early window. */
  early_steps: number;
  /** Allowed early |b - a|, float32 ULPs of a. */
  early_limit_ulp32: number;
  /** Largest early |b - a|, float32 ULPs of a. */
  early_max_ulp32: number;
  /** Allowed later |b - a| (absolute). */
  envelope: number;
  /** The envelope as a multiple of the median step-to-step change of a. */
  envelope_factor: number;
  /** Largest later |b - a| over the median step-to-step change of a. */
  max_envelope_ratio: number;
  /** Mean of b - a over the long window. */
  bias_mean: number;
  /** t statistic of the block means of b - a (0 when skipped). */
  bias_t: number;
  /** Largest |t| accepted. */
  bias_limit: number;
  /** Blocks of the bias test; 0 when the long window is too short for it. */
  bias_blocks: number;
  /** The first test that broke, measured against its bound (absent when the lane passed). */
  failure?: DriftFailure;
}

/**
 * The first drift test that broke (docs/parity.md, "The drift lane"): what was measured at which
 * step against which bound. Root causes and reports read this, never the lane's sentence.
 */
export interface DriftFailure {
  /** `early` (ULPs in the early window), `envelope` (the drift envelope) or `bias` (mean b-a). */
  test: "early" | "envelope" | "bias";
  /** Metric judged. */
  metric: string;
  /** Step where the test first broke (bias: the first block pushing the window's way). */
  step: number;
  /**
   * What was measured: early, |b - a| in float32 ULPs of a; envelope, |b - a|; bias, the mean of
   * b - a over the long window.
   */
  measured: number;
  /** The bound it broke: early, ULPs; envelope, the envelope (absolute); bias, the |t| limit. */
  bound: number;
  /** Early and envelope: |b - a| at `step`. */
  abs_diff?: number;
  /** Envelope: the envelope as a multiple of the median step-to-step change of a. */
  envelope_factor?: number;
  /** Bias: the t statistic of the block means. */
  t?: number;
  /** Bias: blocks of the test. */
  blocks?: number;
  /** Bias: first step of the long window. */
  from?: number;
  /** Bias: last step of the long window. */
  to?: number;
}

/** Restored-state check of one resume phase: its `loaded` digests vs the split's `saved`. */
export interface StateCheckSummary {
  /** Resume phase checked (the split, for the save check). */
  phase: string;
  /**
   * `save`: the split's saved digests against the baseline's snapshot at the save step and against
   * what the checkpoint files hold (a `files` event); `perturb` (a fused split): the baseline's
   * snapshot just before its save against its `after_save` digests just after; absent:
   * a resume's loaded digests against the saved ones, and its gradient buffers as its first step
   * begins against the baseline's at that step (`grad_buffers`, from `grads` events); `convert`:
   * the converter's universal folder, read back, against the split's saved digests.
   */
  check?: "save" | "convert" | "perturb";
  /** PASS, FAIL, or ERROR; `available: false` when the trainer emits no digests. */
  verdict: Verdict | "N/A";
  /** Whether both sides carried digests. */
  available: boolean;
  /** Components whose digests differ. */
  differing: string[];
  /**
   * The tensors whose per-tensor digests differ (`layers.0.experts.w2 · expert 2 · exp_avg`), the
   * first 50, when both events carry `tensors`.
   */
  differing_tensors?: string[];
  /** How many tensors differ in all. */
  differing_tensors_total?: number;
  /** Components compared. */
  compared?: string[];
  /** Components present on only one side (not verifiable; makes the check ERROR, never PASS). */
  missing?: string[];
  /**
   * Save check only: components the engine's saved digests name that the checkpoint files, read
   * back by a process of their own, do not hold (a save that wrote no optimizer state).
   */
  not_in_files?: string[];
  /** Save check only: components the files hold with other bytes than the engine's saved state. */
  files_differing?: string[];
  /** Save check only: components compared between the saved digests and the files. */
  files_compared?: string[];
  /**
   * Restore checks of a resume from a save that is not the last (`resume.<name>.from_step`): the
   * saved step it was to load.
   */
  from_step?: number;
  /**
   * Restore checks: where the loaded digests differ from the state saved at the resume's step
   * but equal, in some of those components, the state the split saved at another step: that
   * step, the components, and whether they are every differing one ("loaded the state saved at
   * step 6"). Decided in `src/parity/state/state_checks.ts`; reports render it, never re-derive it.
   */
  loaded_save?: LoadedSave;
  /**
   * Save and convert checks: components of the saved digests the files cannot give (the reader's
   * `not_read`: DeepSpeed saves no accumulation-window position, ZeRO-3 no module weights);
   * never compared, never counted as equal.
   */
  files_not_checkable?: string[];
  /**
   * The framework the trainer's events say wrote them (`deepspeed`), so cards and reports name
   * components in its words (`params`: the fp32 master).
   */
  framework?: string;
  /** Why the verdict is what it is, in one sentence. */
  reason?: string;
}

/** A restore that loaded (part of) the state saved at another step (see `loaded_save`). */
export interface LoadedSave {
  /** The save step whose digests the loaded ones equal. */
  step: number;
  /** The differing components whose loaded digests equal that save's, sorted. */
  components: string[];
  /** Whether they are every component that differs from the intended save. */
  all: boolean;
}

/** Per-process byte counts of one plan. */
export interface ProcessLoad {
  /** Bytes this process sends to other processes. */
  send: number;
  /** Bytes this process receives from other processes. */
  recv: number;
}

/** Verification and cost of one replica policy's plan. */
export interface PlanSyncSummary {
  /** Policy name. */
  policy: string;
  /** The plan phase. */
  phase: string;
  /** The verifier accepted the plan. */
  verified: boolean;
  /** Why the verifier rejected it. */
  error?: string;
  /** Number of segments. */
  segments: number;
  /** Bytes that cross processes. */
  moved_bytes: number;
  /** Bytes copied within a process. */
  local_bytes: number;
  /** Largest per-process send load, bytes. */
  max_process_bytes: number;
  /** Mean per-process send load, bytes. */
  mean_process_bytes: number;
  /** Load per process id. */
  per_process?: Record<string, ProcessLoad>;
  /** Resume phases that ran on the plan's target topology (the reshard the plan stands for). */
  reshard_resumes?: string[];
  /** Who planned it, as the plan file records (absent: the planner did not say). */
  planner?: PlannerRecord;
  /** The harness's own planner on the same maps, when another planner made the plan. */
  second_opinion?: SecondOpinion;
  /** The plan executed on the checkpoint's bytes and compared with the reshard's loaded state. */
  execution?: PlanExecution;
}

/** The `planner` record of a plan file. */
export interface PlannerRecord {
  /** Module or program, e.g. `deepspeed.checkpoint.affine_transfer`. */
  name: string;
  /** Entry point used, e.g. `plan_transfer + replica_selector`. */
  api?: string;
  /** Version of the package that planned. */
  version?: string;
  /** How faithfully the planner's API expresses the policy. */
  policy_fidelity?: string;
  /** A planner fault injected on purpose (`none` when clean). */
  fault?: string;
  /** The parameter the fault touches. */
  fault_parameter?: string;
}

/** The harness planner's plan of the same maps, compared segment for segment. */
export interface SecondOpinion {
  /** The harness planner that re-planned (`parity <version>`). */
  planner: string;
  /** Whether it could re-plan (an unknown policy or a refused map cannot). */
  available: boolean;
  /** Every parameter's segments equal, in order. */
  equal: boolean;
  /** Parameters compared. */
  parameters: number;
  /** Parameters whose segments differ. */
  differing_parameters: number;
  /** The first difference, in one sentence. */
  first_difference?: string;
}

/** One expert slot whose bytes differ between the executed plan and the reshard. */
export interface SlotMismatch {
  /** Target process. */
  process: number;
  /** Parameter name. */
  parameter: string;
  /** `module`, `fp32`, `exp_avg`, `exp_avg_sq`. */
  kind: string;
  /** Global expert the reshard holds in that slot. */
  expert: number;
  /** Local slot on the process. */
  slot: number;
  /** Logical region, `[e:e+1, 0:a, 0:b]`. */
  region: string;
  /** What differs: `bytes`, or the experts of each side when the slot holds another expert. */
  detail: string;
}

/** The plan-execute check of one policy. */
export interface PlanExecution {
  /** The execute phase. */
  phase: string;
  /** The reshard resume it is compared with. */
  against?: string;
  /** PASS only when every slot of every kind agrees on every process. */
  verdict: Verdict;
  /** Slots compared (process × parameter × kind × slot). */
  compared: number;
  /** Kinds compared. */
  kinds: string[];
  /** Mismatching slots (at most 20 listed). */
  mismatches: SlotMismatch[];
  /** Mismatches in all. */
  mismatch_count: number;
  /** One sentence. */
  reason: string;
}

/** The rule behind a `derived_rtol`: `max(max_rel_deviation × multiplier, floor)`. */
export interface NoiseRtolDerivation {
  /** Factor over the largest deviation the repeats showed. */
  multiplier: number;
  /** Lower bound of the derived rtol. */
  floor: number;
  /** `default` (the harness's rule) or `tolerance-auto` (the experiment's `tolerance: auto`). */
  source: "default" | "tolerance-auto";
}

/** What the repeated baselines say about the trainer's determinism. */
export interface NoiseFloorSummary {
  /** Extra baselines run. */
  repeats: number;
  /** All repeats bit-identical to the baseline. */
  identical: boolean;
  /** Largest relative deviation of any repeat from the baseline, any step. */
  max_rel_deviation?: number;
  /** Per-step spread (max relative deviation) for steps that differ. */
  spread?: { step: number; max_rel: number }[];
  /**
   * The relative tolerance derived from the floor (`derivation` says how): the companion lane of
   * every default exact comparison, and every tolerance lane under `tolerance: auto`.
   */
  derived_rtol?: number;
  /** How `derived_rtol` was derived: max(max_rel_deviation × multiplier, floor). */
  derivation?: NoiseRtolDerivation;
  /** True when `spread` lists only the first differing steps (it is capped). */
  spread_truncated?: boolean;
  /** Metrics the repeats were compared on. */
  metrics?: string[];
}

/** A named finding outside the comparisons (pre-flight, metrics reading, plan checks). */
export interface Diagnostic {
  /** `error` diagnostics make the verdict ERROR or FAIL as their code says. */
  level: "error" | "warning" | "info";
  /** Stable identifier, e.g. `metrics-rounded`, `save-mid-accumulation`. */
  code: string;
  /** Human sentence. */
  message: string;
  /** Phase concerned. */
  phase?: string;
  /** Metric concerned, when the finding is about one metric. */
  metric?: string;
  /** First step concerned, when the finding is about steps. */
  step?: number;
  /** How many lines, steps or records share this finding (one diagnostic per code and phase). */
  count?: number;
  /** The loss alias rule's finding (`metrics-loss-alias`, `metrics-loss-ambiguous`). */
  loss_alias?: LossAliasFinding;
}

/**
 * How a reader chose the metric it reads as `loss` when no `loss` was logged: `declared`
 * (`metrics.loss` named it), `alias` (the one metric the alias rule matched), or `ambiguous`
 * (several matched, so none was taken); docs/parity.md, "Metrics readers".
 */
export interface LossAliasFinding {
  /** How the choice was made. */
  rule: "declared" | "alias" | "ambiguous";
  /** Every metric of the source the alias rule matched (sorted). */
  candidates: string[];
  /** The metric read as `loss`; absent when none was taken. */
  chosen?: string;
}

/**
 * The baseline judged against the golden stored for this environment (`golden: true`). The
 * comparisons themselves are in {@link RunSummary.comparisons} as `golden~baseline`.
 */
export interface GoldenSummary {
  /** Worst verdict of the golden comparisons; ABSTAIN when no golden exists for this key. */
  verdict: Verdict;
  /** Environment key (docs/experiment-files.md, "Goldens"). */
  environment_key: string;
  /** Golden file looked up (relative to the working folder when inside it). */
  file: string;
  /** Whether that file exists. */
  found: boolean;
  /** `exact` (same environment facts), `tolerance` (same key, other facts). */
  lane?: "exact" | "tolerance";
  /** Why this lane, or why ABSTAIN. */
  reason: string;
  /** Environment facts that differ from the golden's (same key only). */
  differences?: string[];
  /** Run the golden was saved from. */
  source_run?: string;
}

/**
 * One entry of the root-cause card (`src/parity/root_cause.ts`): what a pattern of failures most
 * likely means and what to try next.
 */
export interface Finding {
  /** Stable code, e.g. `cause-converter` (docs/parity.md, "Root-cause codes"). */
  code: string;
  /** The verdict this finding explains. */
  verdict: Verdict;
  /** One or two sentences: what happened and the likely cause. */
  title: string;
  /** Short form for the console's last line (README: `a~b FAIL, first divergent step 21; ...`). */
  headline?: string;
  /** The next thing to try. */
  next: string;
  /** Comparisons this finding groups (identical failures are one finding). */
  comparisons?: string[];
  /** First divergent step of the group. */
  step?: number;
  /** State components whose restored digest differs. */
  state?: string[];
  /** Phases concerned (a failed phase). */
  phases?: string[];
  /** Last log lines of a failed phase. */
  log_tail?: string;
  /** Supporting lines: one per group of identical failures. */
  evidence: string[];
}

/** What one group of phases that did not train in this run (cached or shared) would have cost. */
export interface BillSaving {
  /** Phases. */
  phases: number;
  /** Optimizer steps they did not train again (summed over phases). */
  step_equivalents: number;
  /**
   * Device-seconds they did not spend again: Σ of each phase's measured wall where it ran
   * (`reused_wall_s`; for a fused split, the baseline's wall scaled to the steps the split
   * would have trained) × the devices it holds. Absent in summaries written before it existed.
   */
  device_seconds?: number;
}

/**
 * What a verdict cost (`bill` in summary.json): work trained, devices held, and the wall time
 * against the critical path (the longest chain of launched phases through what they consume).
 */
export interface RunBill {
  /** Optimizer steps the phases launched in this run trained, summed over phases. */
  step_equivalents: number;
  /** Σ over launched phases of wall time × devices held (a trainer's world size; 1 for a host tool). */
  device_seconds: number;
  /** The run's wall time (`wall_s`). */
  wall_s: number;
  /** Seconds of the critical path: the longest chain of launched phases' wall times. */
  critical_path_s: number;
  /** Its phases, first to last. */
  critical_path: string[];
  /** `wall_s / critical_path_s` (1 = no phase waited for a device or a slot); null without one. */
  wall_over_critical: number | null;
  /** Reused from this experiment's earlier runs. */
  cached: BillSaving;
  /** Reused from another experiment of the results folder. */
  shared: BillSaving;
  /**
   * What `schedule.split: fused` saved: the split phase that did not run (its steps, and the
   * baseline's measured wall × saveAt/steps × its devices); absent for a separate split.
   */
  fused?: BillSaving;
}

/** The whole `summary.json`. */
export interface RunSummary {
  /** Always 1. */
  schema_version: 1;
  /** Harness version. */
  harness_version: string;
  /** Experiment name (with matrix suffix). */
  experiment: string;
  /** Run id (sortable UTC time plus a short hash). */
  run_id: string;
  /** ISO start time. */
  started_at: string;
  /** ISO end time. */
  finished_at: string;
  /** Worst verdict. */
  verdict: Verdict;
  /** Process exit code the verdict maps to. */
  exit_code: number;
  /** Harness wall time, seconds. */
  wall_s: number;
  /** Sum of child process wall times, seconds. */
  children_wall_s: number;
  /** What the verdict cost: steps trained, device-seconds, the critical path and what was reused. */
  bill?: RunBill;
  /** Stopped by SIGINT/SIGTERM. */
  interrupted: boolean;
  /** Schedule length. */
  steps: number;
  /** Optimizer step after which the split phase saves (its last save, where it stops). */
  save_at: number;
  /** With several saves (`schedule.save_at: [3, 6]`): every save step, ascending. */
  save_steps?: number[];
  /** Phases in execution order. */
  phases: PhaseSummary[];
  /** Lane results. */
  comparisons: ComparisonSummary[];
  /** Restored-state checks. */
  state_checks: StateCheckSummary[];
  /** Plan-sync policies. */
  plan_sync: PlanSyncSummary[];
  /** Repeated-baseline determinism evidence. */
  noise_floor: NoiseFloorSummary;
  /** Pre-flight and sanity findings. */
  diagnostics: Diagnostic[];
  /** The root-cause card, most decisive first (empty on PASS; absent in older summaries). */
  findings?: Finding[];
  /** Git commit of the harness tree, when known. */
  git_commit?: string | null;
  /**
   * The resolved configuration: 16 hex of the SHA-256 of `experiment.resolved.yaml` (defaults,
   * `--set` and matrix applied). "Last run" comparisons only look at runs with the same one
   * (absent in older summaries).
   */
  config?: string;
  /** The golden comparison, when the experiment sets `golden: true`. */
  golden?: GoldenSummary;
  /** The judge settings in force, defaults resolved (absent in older summaries). */
  judge?: JudgeSettings;
  /** How the report draws the run (absent in older summaries: the chart defaults). */
  charts?: ChartSettings;
}

/** Exit code of each verdict (README, "Exit codes"): the one table, kept in `exit_codes.ts`. */
export { EXIT_CODES } from "./exit_codes.ts";

/**
 * Severity order used to combine verdicts: a proven divergence (FAIL) outranks a phase that
 * could not complete (ERROR), which outranks ABSTAIN, which outranks PASS.
 */
export const VERDICT_RANK: Record<Verdict, number> = { PASS: 0, ABSTAIN: 1, ERROR: 2, FAIL: 3 };
