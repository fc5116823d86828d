/**
 * Bit-for-bit comparison of two metric series of the same phase: every step and every metric
 * either side logged, equal only when both are present with the same float64 bits.
 *
 * @module
 */

import { type MetricSeries, valueAt } from "../metrics/mod.ts";

/** The first difference between two series, or none. */
export interface SeriesDifference {
  /** Steps either side logged. */
  steps: number;
  /** First step that differs, null when identical. */
  first_differing_step: number | null;
  /** Metric that differs there. */
  metric?: string;
  /** Stored value (null when absent). */
  stored?: number | null;
  /** Rerun value (null when absent). */
  rerun?: number | null;
}

const bits = new Float64Array(1);
const words = new BigUint64Array(bits.buffer);

function sameBits(a: number, b: number): boolean {
  bits[0] = a;
  const wa = words[0];
  bits[0] = b;
  return wa === words[0];
}

/** Compares `stored` and `rerun` at every step and metric of either, in step order. */
export function diffSeries(stored: MetricSeries, rerun: MetricSeries): SeriesDifference {
  const steps = [...new Set([...stored.steps, ...rerun.steps])].sort((x, y) => x - y);
  const metrics = [...new Set([...Object.keys(stored.values), ...Object.keys(rerun.values)])];
  for (const step of steps) {
    for (const metric of metrics) {
      const a = valueAt(stored, metric, step);
      const b = valueAt(rerun, metric, step);
      if (a === undefined && b === undefined) continue;
      if (a === undefined || b === undefined || !sameBits(a, b)) {
        return {
          steps: steps.length,
          first_differing_step: step,
          metric,
          stored: a ?? null,
          rerun: b ?? null,
        };
      }
    }
  }
  return { steps: steps.length, first_differing_step: null };
}
