/**
 * Inputs and output of {@link evaluateRun} (the pipeline's entry point into the engine).
 *
 * @module
 */

import type { MetricSeries, MetricsFormat } from "../metrics/mod.ts";
import type {
  Calibration,
  CompareSpec,
  ComparisonSummary,
  Diagnostic,
  DriftSpec,
  Lane,
  LaneChoice,
  NoiseFloorSummary,
  StateCheckSummary,
  ToleranceSpec,
  Verdict,
} from "../types/mod.ts";

/** What the pipeline knows about one finished (or failed) phase. */
export interface PhaseEvidence {
  /** Phase name (`baseline`, `split`, `resume-native`, `baseline-repeat-1`, ...). */
  name: string;
  /** What the phase does. */
  role: "baseline" | "split" | "resume" | "repeat" | "calibrate" | "convert" | "plan" | "execute";
  /** How it ended; only `ok` phases are judged. */
  status: "ok" | "failed" | "timeout" | "skipped";
  /** Metrics file or folder. */
  metricsPath?: string;
  /** How to read it (default JSONL). */
  metrics?: {
    format: MetricsFormat;
    pattern?: string;
    step_unit?: "step" | "samples";
    samples_per_step?: number;
  };
  /** How a resume phase loads its checkpoint. */
  resumeKind?: "native" | "universal" | "plan";
  /**
   * Resumes and calibrations: the saved step they load (`resume.<name>.from_step`); their window
   * starts one step later. Default the input's `saveAt` (the last save).
   */
  fromStep?: number;
  /** Topology key: equal strings are the same topology; the split's is the saved one. */
  topology?: string;
  /** Resumes (required there): the lane against the baseline and why, from the resolved plan. */
  lane?: LaneChoice;
  /** Calibration phases: the resume they perturb and the relative LR error they apply. */
  calibration?: Calibration;
  /**
   * Whether it wrote the checkpoint the resumes load: the split, or under `schedule.split: fused`
   * the baseline (then the save check compares the baseline's state before and after its save).
   */
  saves?: boolean;
  /** Its metrics as read ahead (while later phases ran); read from `metricsPath` when absent. */
  series?: Promise<MetricSeries>;
  /** Split: its checkpoint files as the harness's reader digested them (`trainer.checkpoint_format`). */
  checkpointFiles?: CheckpointFilesEvidence;
}

/** What the checkpoint reader found in a folder: its document, or why it could not read it. */
export interface CheckpointFilesEvidence {
  /** `digests`, `tensors`, `absent`, `not_read` (component -> why) and `layout`. */
  document?: Record<string, unknown>;
  /** Why the folder could not be read. */
  unreadable?: string;
}

/** Everything the engine needs to judge one run. */
export interface EvaluationInput {
  /** Schedule length (optimizer steps). */
  steps: number;
  /** Optimizer step after which the split saved last (and stopped). */
  saveAt: number;
  /** Every step after which the split saved, ascending; default `[saveAt]`. */
  saveSteps?: number[];
  /** Micro-batches per optimizer step, when the experiment declares it. */
  gradAccum?: number;
  /** Metrics compared by default (experiment `metrics`, default `["loss"]`). */
  metrics: string[];
  /** Explicit comparisons; when given they replace the defaults. */
  compare?: CompareSpec[];
  /** Tolerance lane settings in force (fixed rtol/atol or `auto`). */
  tolerance: ToleranceSpec;
  /** Drift lane thresholds in force. */
  drift: DriftSpec;
  /** All phases of the run. */
  phases: PhaseEvidence[];
  /** The convert phase's universal folder as the checkpoint reader digested it, when it ran. */
  converted?: { phase: string; files: CheckpointFilesEvidence };
}

/** The engine's judgement of one run. */
export interface Evaluation {
  /** Worst of comparisons, state checks and diagnostics. */
  verdict: Verdict;
  /** Lane results. */
  comparisons: ComparisonSummary[];
  /** Restored-state checks, one per resume phase. */
  state_checks: StateCheckSummary[];
  /** Repeated-baseline evidence. */
  noise_floor: NoiseFloorSummary;
  /** Reader, pre-flight and sanity findings (each tagged with its phase). */
  diagnostics: Diagnostic[];
  /** Metrics of every phase that had a readable metrics source, baseline first. */
  series: Map<string, MetricSeries>;
}

/** A comparison to run, before judging. */
export interface PlannedComparison {
  /** Display name (`a~b` unless the experiment names it). */
  name: string;
  /** Reference phase. */
  a: string;
  /** Candidate phase. */
  b: string;
  /** Metric. */
  metric: string;
  /** Lane. */
  lane: Lane;
  /** Window of steps both sides must have. */
  window: { from: number; to: number };
  /** Tolerance overrides of an explicit entry, or the derived rtol of a noise-floor lane. */
  rtol?: number;
  /** Tolerance overrides of an explicit entry. */
  atol?: number;
  /** Tolerance overrides of an explicit entry. */
  max_failures?: number;
  /** From `compare:` (true) or the defaults (false). */
  explicit: boolean;
  /** Why this lane. */
  laneReason: string;
}
