/**
 * The noise floor: repeated baselines (`baseline-repeat-<k>`) compared with the baseline step by
 * step. Any difference means the trainer is not deterministic enough for an exact verdict (exact
 * lanes ABSTAIN); {@link deriveNoiseRtol} then derives the tolerance the run is judged with instead,
 * Megatron's `compute_golden_statistics` rule: max(max relative deviation × multiplier, floor).
 *
 * @module
 */

import type { MetricSeries } from "../../metrics/mod.ts";
import {
  type Diagnostic,
  NOISE_RTOL_RULE,
  type NoiseFloorSummary,
  type NoiseRtolDerivation,
  type ToleranceSpec,
} from "../../types/mod.ts";
import { PARITY_CODES } from "../codes.ts";

/** Most per-step spread entries kept in the summary. */
export const SPREAD_LIMIT = 1000;

/** One repeated baseline. */
export interface RepeatEvidence {
  /** Phase name. */
  name: string;
  /** Its metrics, or undefined when the phase did not complete. */
  series?: MetricSeries;
}

/** Result of {@link measureNoiseFloor}. */
export interface NoiseFloorResult {
  /** For summary.json. */
  summary: NoiseFloorSummary;
  /** Incomplete repeats, nondeterminism. */
  diagnostics: Diagnostic[];
}

/**
 * Compares every repeat with the baseline on `metrics` (those the baseline reports) at every
 * baseline step. Steps a repeat lacks and non-finite values are not deviations (the readers and
 * the phase status report them); they make a `noise-floor-incomplete` warning.
 */
export function measureNoiseFloor(
  baseline: MetricSeries | undefined,
  repeats: RepeatEvidence[],
  metrics: string[],
): NoiseFloorResult {
  const diagnostics: Diagnostic[] = [];
  if (repeats.length === 0) return { summary: { repeats: 0, identical: true }, diagnostics };
  const used = baseline === undefined ? [] : metrics.filter((m) => baseline.values[m]);
  const spread = new Map<number, number>();
  let maxRel = 0;
  let compared = 0;
  for (const repeat of repeats) {
    if (baseline === undefined || repeat.series === undefined) {
      diagnostics.push({
        level: "warning",
        code: PARITY_CODES.noiseFloorIncomplete,
        phase: repeat.name,
        message: `repeat ${repeat.name} has no metrics to compare with the baseline`,
      });
      continue;
    }
    compared++;
    let lacking = 0;
    for (const metric of used) {
      lacking += deviations(baseline, repeat.series, metric, spread);
    }
    if (lacking > 0) {
      diagnostics.push({
        level: "warning",
        code: PARITY_CODES.noiseFloorIncomplete,
        phase: repeat.name,
        count: lacking,
        message: `repeat ${repeat.name} lacks ${lacking} baseline values (or they are not finite)`,
      });
    }
  }
  for (const rel of spread.values()) if (rel > maxRel) maxRel = rel;
  const steps = [...spread.keys()].sort((x, y) => x - y);
  const summary: NoiseFloorSummary = {
    repeats: repeats.length,
    identical: spread.size === 0,
    metrics: used,
  };
  if (spread.size > 0) {
    summary.max_rel_deviation = maxRel;
    summary.spread = steps.slice(0, SPREAD_LIMIT).map((step) => ({
      step,
      max_rel: spread.get(step) as number,
    }));
    if (steps.length > SPREAD_LIMIT) summary.spread_truncated = true;
    diagnostics.push({
      level: "warning",
      code: PARITY_CODES.nondeterministic,
      step: steps[0],
      count: steps.length,
      message:
        `repeated baselines differ from the baseline at ${steps.length} steps (first ${
          steps[0]
        }, max relative deviation ${maxRel}): exact lanes ABSTAIN; default comparisons are also ` +
        "judged at a tolerance derived from this deviation",
    });
  } else if (compared === 0) {
    summary.identical = true;
  }
  return { summary, diagnostics };
}

/** Megatron's rule: max(max relative deviation × multiplier, floor). */
export function deriveRtol(maxRelDeviation: number, multiplier: number, floor: number): number {
  return Math.max(maxRelDeviation * multiplier, floor);
}

/** A tolerance derived from the noise floor, with the rule that derived it. */
export interface NoiseRtol {
  /** max(max_rel_deviation × multiplier, floor). */
  rtol: number;
  /** The rule's parameters and where they came from. */
  derivation: NoiseRtolDerivation;
}

/**
 * The one place a noise floor becomes a tolerance. `tolerance: auto` always derives (its own
 * multiplier and floor, an identical floor giving `floor`); otherwise a non-identical floor
 * derives with {@link NOISE_RTOL_RULE}, so the exact lanes it silences are still judged, and an
 * identical one derives nothing (exact lanes speak).
 */
export function deriveNoiseRtol(
  noise: NoiseFloorSummary,
  tolerance: ToleranceSpec,
): NoiseRtol | undefined {
  const auto = "auto" in tolerance;
  if (!auto && noise.identical) return undefined;
  const { multiplier, floor } = auto ? tolerance : NOISE_RTOL_RULE;
  return {
    rtol: deriveRtol(noise.max_rel_deviation ?? 0, multiplier, floor),
    derivation: { multiplier, floor, source: auto ? "tolerance-auto" : "default" },
  };
}

/** Adds per-step relative deviations of `repeat` from `base` into `spread`; returns gaps. */
function deviations(
  base: MetricSeries,
  repeat: MetricSeries,
  metric: string,
  spread: Map<number, number>,
): number {
  const bv = base.values[metric];
  const bp = base.present[metric];
  const rv = repeat.values[metric];
  const rp = repeat.present[metric];
  let lacking = 0;
  let j = 0;
  for (let i = 0; i < base.steps.length; i++) {
    if (bp[i] !== 1) continue;
    const step = base.steps[i];
    while (j < repeat.steps.length && repeat.steps[j] < step) j++;
    if (rv === undefined || j >= repeat.steps.length || repeat.steps[j] !== step || rp[j] !== 1) {
      lacking++;
      continue;
    }
    const x = bv[i];
    const y = rv[j];
    if (!Number.isFinite(x) || !Number.isFinite(y)) {
      lacking++;
      continue;
    }
    if (x === y) continue;
    const ax = Math.abs(x);
    const rel = ax === 0 ? Math.abs(y) : Math.abs(y - x) / ax;
    const prior = spread.get(step);
    if (prior === undefined || rel > prior) spread.set(step, rel);
  }
  return lacking;
}
