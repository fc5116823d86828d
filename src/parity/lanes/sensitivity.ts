/**
 * What a PASS is worth: a resume's calibration phases repeat it with a known LR error
 * (`resume.<name>.sensitivity`), and each is judged in the resume's own lane against the same
 * reference. The smallest error the lane catches is the comparison's sensitivity on this very
 * experiment; a lane that catches none of them says so (docs/parity.md, "Sensitivity").
 *
 * @module
 */

import { percent } from "../../format/mod.ts";
import type { MetricSeries } from "../../metrics/mod.ts";
import type {
  CalibrationResult,
  ComparisonSummary,
  Diagnostic,
  SensitivitySummary,
  Verdict,
} from "../../types/mod.ts";
import { PARITY_CODES } from "../codes.ts";
import type { PhaseEvidence, PlannedComparison } from "../types.ts";

/** How far the logged LR ratio may stray from `1 + lr_error`, relative to the error. */
const APPLIED_REL = 1e-2;

/** What {@link withSensitivity} needs of the run being judged. */
export interface SensitivityContext {
  /** Every phase of the run. */
  phases: Map<string, PhaseEvidence>;
  /** The read series of a phase that completed. */
  judged: (name: string) => MetricSeries | undefined;
  /** Judges one planned comparison as the run does. */
  judge: (plan: PlannedComparison) => ComparisonSummary;
  /** Where a calibration that did not take effect is reported. */
  diagnostics: Diagnostic[];
  /** First resumed step (save step + 1). */
  firstResumed: number;
}

/**
 * `judged` with its `sensitivity`, when `plan` compares a baseline with a resume that has
 * calibration phases: each is judged like `plan` with the calibration in the resume's place.
 */
export function withSensitivity(
  judged: ComparisonSummary,
  plan: PlannedComparison,
  ctx: SensitivityContext,
): ComparisonSummary {
  if (ctx.phases.get(plan.a)?.role !== "baseline") return judged;
  const calibrations = [...ctx.phases.values()]
    .filter((p) => p.calibration?.of === plan.b)
    .sort((p, q) => p.calibration!.lr_error - q.calibration!.lr_error);
  if (calibrations.length === 0) return judged;
  const tried = calibrations.map((phase): CalibrationResult => {
    const lrError = phase.calibration!.lr_error;
    const result = ctx.judge({ ...plan, name: `${plan.a}~${phase.name}`, b: phase.name });
    const first = phase.fromStep !== undefined ? phase.fromStep + 1 : ctx.firstResumed;
    const applied = _lrShows(ctx.judged(plan.a), ctx.judged(phase.name), lrError, first);
    if (applied === false) {
      _addOnce(ctx.diagnostics, {
        level: "warning",
        code: PARITY_CODES.calibrationNotApplied,
        phase: phase.name,
        message: `${phase.name} logs the reference's LR, not LR × ${1 + lrError}: the trainer ` +
          "ignored ${lr_scale} / PARITY_LR_SCALE, so this calibration measures nothing and is " +
          "not counted",
      });
    }
    return {
      phase: phase.name,
      lr_error: lrError,
      verdict: result.verdict,
      first_divergent_step: result.first_divergent_step,
      ...(result.drift?.failure ? { test: result.drift.failure.test } : {}),
      applied,
    };
  });
  return { ...judged, sensitivity: summarize(tried, judged.lane, judged.verdict) };
}

/**
 * The detection threshold and its sentence from the judged calibrations. Only a PASS can be
 * calibrated: a resume that already fails carries its fault into every calibration.
 */
export function summarize(
  tried: CalibrationResult[],
  lane: string,
  verdict: Verdict = "PASS",
): SensitivitySummary {
  if (verdict !== "PASS") {
    return {
      perturbation: "lr_scale",
      tried,
      detects: null,
      missed: null,
      statement: `not measured: the comparison is ${verdict} itself, so its calibrations ` +
        "(the same resume with an LR error on top) cannot tell that error from what already differs",
    };
  }
  const counted = tried.filter((t) => t.applied !== false);
  // The smallest error from which every larger counted one FAILs: a claim the grid supports.
  let detects: number | null = null;
  let caught: CalibrationResult | undefined;
  for (let i = counted.length - 1; i >= 0 && counted[i].verdict === "FAIL"; i--) {
    caught = counted[i];
    detects = caught.lr_error;
  }
  const below = counted.filter((t) => detects === null || t.lr_error < detects);
  const passed = below.filter((t) => t.verdict === "PASS");
  const missed = passed.length > 0 ? passed[passed.length - 1].lr_error : null;
  const unverified = counted.some((t) => t.applied === null)
    ? " (the trainer logs no lr, so the applied error is not verified)"
    : "";
  let statement: string;
  if (counted.length === 0) {
    statement = "no calibration took effect, so what this lane can detect is unknown";
  } else if (caught && detects !== null) {
    const where = caught.first_divergent_step === null
      ? ""
      : ` (first divergent step ${caught.first_divergent_step}${
        caught.test ? `, ${caught.test} test` : ""
      })`;
    statement = `would have caught an LR error of ${percent(detects)} or more${where}` +
      (missed === null
        ? `; ${percent(detects)} is the smallest error tried`
        : `; an error of ${percent(missed)} passed`) +
      unverified;
  } else {
    const largest = counted[counted.length - 1].lr_error;
    const what = lane === "drift" ? "reduction-order drift" : "what this lane allows";
    statement = `cannot tell an LR error of up to ${percent(largest)} from ${what} on this ` +
      "experiment: the loss alone cannot separate such a bug here, so the restored-state " +
      `check is the evidence for the checkpoint${unverified}`;
  }
  return { perturbation: "lr_scale", tried, detects, missed, statement };
}

/**
 * Whether `b`'s logged LR is `a`'s × (1 + error) at the first resumed step with a non-zero LR;
 * null when either side logs no LR there.
 */
function _lrShows(
  a: MetricSeries | undefined,
  b: MetricSeries | undefined,
  error: number,
  from: number,
): boolean | null {
  if (!a?.values.lr || !b?.values.lr) return null;
  const at = (s: MetricSeries) => {
    const byStep = new Map<number, number>();
    s.steps.forEach((step, i) => {
      if (step >= from && s.present.lr[i] === 1) byStep.set(step, s.values.lr[i]);
    });
    return byStep;
  };
  const lrA = at(a);
  for (const [step, y] of at(b)) {
    const x = lrA.get(step);
    if (x === undefined || x === 0 || !Number.isFinite(x) || !Number.isFinite(y)) continue;
    return Math.abs(y / x - 1 - error) <= APPLIED_REL * error;
  }
  return null;
}

function _addOnce(list: Diagnostic[], d: Diagnostic): void {
  if (!list.some((x) => x.code === d.code && x.phase === d.phase)) list.push(d);
}
