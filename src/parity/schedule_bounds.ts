/**
 * Metrics logged outside a phase's schedule: a step beyond the last step the phase runs (`1e30`
 * in a schedule of 40), or a resume's step at or before the save point (before its window). The
 * judge would silently ignore them; they are error diagnostics instead, so such a run is never
 * PASS (docs/parity.md).
 *
 * @module
 */

import type { MetricSeries } from "../metrics/mod.ts";
import type { Diagnostic, PhaseSpec } from "../types/mod.ts";

/** Diagnostic codes of {@linkcode scheduleDiagnostics}. */
const SCHEDULE_CODES = {
  /** A step after the last step the phase runs. */
  beyond: "metrics-beyond-schedule",
  /** A resume logged a step at or before the save point. */
  beforeWindow: "metrics-before-resume-window",
} as const;

/**
 * One error diagnostic per phase and kind for steps outside the schedule (a split's steps past
 * its last save included). `saveAt` is the split's last save step, where a resume without its
 * own `fromStep` starts. The upper bound is skipped when `stepsCountMicroBatches` (steps then exceed the
 * optimizer schedule by design, and `step-unit-micro-batches` already says so).
 */
export function scheduleDiagnostics(
  specs: readonly PhaseSpec[],
  series: ReadonlyMap<string, MetricSeries>,
  saveAt: number,
  stepsCountMicroBatches = false,
): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const spec of specs) {
    const read = series.get(spec.name);
    if (read === undefined || read.steps.length === 0) continue;
    const steps = Array.from(read.steps);
    if (!stepsCountMicroBatches) {
      const beyond = steps.filter((s) => s > spec.stopAt);
      if (beyond.length > 0) {
        out.push({
          level: "error",
          code: SCHEDULE_CODES.beyond,
          phase: spec.name,
          step: beyond[0],
          count: beyond.length,
          message: `${spec.name} logs ${beyond.length} step(s) after its last step ` +
            `${spec.stopAt} (first: ${beyond[0]}); metrics outside the schedule are not judged`,
        });
      }
    }
    if (spec.role === "resume" || spec.role === "calibrate") {
      // A resume from an earlier save (`from_step`) starts there.
      const from = spec.fromStep ?? saveAt;
      const early = steps.filter((s) => s <= from);
      if (early.length > 0) {
        out.push({
          level: "error",
          code: SCHEDULE_CODES.beforeWindow,
          phase: spec.name,
          step: early[0],
          count: early.length,
          message: `${spec.name} logs ${early.length} step(s) at or before the save point ` +
            `${from} (first: ${early[0]}); a resume starts at step ${from + 1}`,
        });
      }
    }
  }
  return out;
}
