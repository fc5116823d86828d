/**
 * Pre-flight and sanity checks that invalidate an experiment whatever the lanes say: a save in
 * the middle of gradient accumulation, metrics counted in micro-batches, an LR schedule that is
 * not pinned to the full run, too few resumed steps.
 *
 * @module
 */

import { type MetricSeries, valueAt } from "../metrics/mod.ts";
import type { Diagnostic } from "../types/mod.ts";
import { PARITY_CODES } from "./codes.ts";
import { findDigestEvent } from "./state/mod.ts";

/** `window-too-small` when fewer than 2 steps follow the save. */
export function checkResumedSteps(steps: number, saveAt: number): Diagnostic[] {
  const resumed = steps - saveAt;
  if (resumed >= 2) return [];
  return [{
    level: "error",
    code: PARITY_CODES.windowTooSmall,
    message: `only ${Math.max(0, resumed)} resumed step(s) (save_at ${saveAt}, steps ${steps}): ` +
      "at least 2 are needed for a resume to prove anything",
  }];
}

/**
 * `save-mid-accumulation` when the split's `saved` event says `micro_step % grad_accum != 0`
 * (`grad_accum` from the event, else the experiment's), and `step-unit-micro-batches` when the
 * experiment declares gradient accumulation and the baseline's steps run past the schedule
 * (they count micro-batches, not optimizer steps).
 */
export function checkAccumulation(
  split: { name: string; series?: MetricSeries } | undefined,
  baseline: { name: string; series?: MetricSeries } | undefined,
  steps: number,
  saveAt: number,
  gradAccum?: number,
): Diagnostic[] {
  const out: Diagnostic[] = [];
  const savedEvents = split?.series?.events.filter((e) => e.event === "saved") ?? [];
  const saved = findDigestEvent(split?.series, "saved", saveAt) ??
    savedEvents.find((e) => e.step === saveAt) ?? savedEvents[savedEvents.length - 1];
  if (saved !== undefined) {
    const micro = saved.fields.micro_step;
    const accum = typeof saved.fields.grad_accum === "number" ? saved.fields.grad_accum : gradAccum;
    if (
      typeof micro === "number" && typeof accum === "number" && accum > 1 && micro % accum !== 0
    ) {
      out.push({
        level: "error",
        code: PARITY_CODES.saveMidAccumulation,
        phase: split?.name,
        step: saved.step ?? saveAt,
        message:
          `the checkpoint was saved at micro-step ${micro}, inside a gradient-accumulation ` +
          `cycle of ${accum} (${micro % accum} micro-batch(es) into it): every resume ` +
          "diverges whatever the checkpoint code does",
      });
    }
  }
  const base = baseline?.series;
  if (gradAccum !== undefined && gradAccum > 1 && base !== undefined && base.steps.length > 0) {
    const last = base.steps[base.steps.length - 1];
    if (last > steps) {
      out.push({
        level: "error",
        code: PARITY_CODES.stepUnitMicroBatches,
        phase: baseline?.name,
        step: last,
        message: `the baseline logs step ${last} but the schedule has ${steps} optimizer steps ` +
          `with grad_accum ${gradAccum}: its steps count micro-batches, so step windows and ` +
          "the save point do not line up with optimizer steps",
      });
    }
  }
  return out;
}

/** `lr-schedule-mismatch` when `resume`'s lr at step save_at+1 differs from the baseline's. */
export function checkLrSchedule(
  baseline: { name: string; series?: MetricSeries } | undefined,
  resume: { name: string; series?: MetricSeries },
  saveAt: number,
  metric = "lr",
): Diagnostic[] {
  if (baseline?.series === undefined || resume.series === undefined) return [];
  const step = saveAt + 1;
  const want = valueAt(baseline.series, metric, step);
  const got = valueAt(resume.series, metric, step);
  if (want === undefined || got === undefined || Object.is(want, got) || want === got) return [];
  return [{
    level: "error",
    code: PARITY_CODES.lrScheduleMismatch,
    phase: resume.name,
    metric,
    step,
    message: `${resume.name} uses ${metric} ${got} at step ${step} where ${baseline.name} uses ` +
      `${want}: the scheduler was not restored or its schedule is not pinned to the full run`,
  }];
}
