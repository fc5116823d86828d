/**
 * Stable diagnostic codes of the parity engine and what each does to the verdict. Reader codes
 * (`metrics-*`) live in `src/metrics/series.ts`; every `error` one of those is ERROR too.
 *
 * @module
 */

import type { Diagnostic, Verdict } from "../types/mod.ts";

/** Diagnostic codes the parity engine emits (besides the readers' `metrics-*` codes). */
export const PARITY_CODES = {
  /**
   * A side's window values of a compared metric are rounded (short, or shorter than the other
   * side's): exact and drift lanes are ERROR on them, FAIL beyond the rounding step.
   */
  rounded: "metrics-rounded",
  /** Fewer than 2 resumed steps (or a comparison window with fewer than 2 steps). */
  windowTooSmall: "window-too-small",
  /** The split saved in the middle of a gradient-accumulation cycle. */
  saveMidAccumulation: "save-mid-accumulation",
  /** The metrics count micro-batches while the schedule counts optimizer steps. */
  stepUnitMicroBatches: "step-unit-micro-batches",
  /** A resumed run's LR at step save_at+1 differs from the baseline's: FAIL. */
  lrScheduleMismatch: "lr-schedule-mismatch",
  /** Nothing was compared, so nothing is proven. */
  noComparisons: "no-comparisons",
  /** An explicit `compare:` entry names a phase the run does not have. */
  unknownPhase: "unknown-phase",
  /** A listed metric is reported by only one side of a default comparison (skipped). */
  metricNotReported: "metric-not-reported",
  /** A repeated baseline failed or lacks steps the baseline has. */
  noiseFloorIncomplete: "noise-floor-incomplete",
  /** Repeated baselines differ: exact lanes ABSTAIN. */
  nondeterministic: "trainer-nondeterministic",
  /** The split reports saved digests but the baseline no snapshot: the save is not judged. */
  saveNotChecked: "save-not-checked",
  /** A calibration resume's logged LR does not show its error: it is not counted. */
  calibrationNotApplied: "calibration-not-applied",
  /**
   * The split's checkpoint folder holds tag folders of the tag template the experiment did not
   * ask for (a script-side extra save): a warning, since nothing judges them.
   */
  unrequestedTags: "checkpoint-tags-not-requested",
} as const;

/**
 * Warning codes the console repeats before its last line (it prints no other diagnostic): what a
 * passing run would otherwise hide.
 */
export const CONSOLE_WARNINGS: ReadonlySet<string> = new Set([PARITY_CODES.unrequestedTags]);

/**
 * Verdict a diagnostic imposes on the run: `warning`/`info` none (PASS), `error` ERROR except
 * `lr-schedule-mismatch` (a proven difference between resumed and baseline runs: FAIL).
 */
export function diagnosticVerdict(diagnostic: Diagnostic): Verdict {
  if (diagnostic.level !== "error") return "PASS";
  return diagnostic.code === PARITY_CODES.lrScheduleMismatch ? "FAIL" : "ERROR";
}
