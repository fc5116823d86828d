/**
 * Display downsampling. Long series are reduced for drawing only, never for judging: each
 * bucket keeps its minimum and maximum (so spikes stay visible), and steps the reader must see
 * (the first divergent step, the save step) are always kept.
 *
 * @module
 */

import { CHART_DEFAULTS } from "../types/mod.ts";

/** Default display budget per series (experiment `charts.max_points`, default in one place). */
export const DEFAULT_MAX_POINTS: number = CHART_DEFAULTS.max_points;

/**
 * Indices of the points to draw from a series of `values` (in step order).
 *
 * Returns every index when `values.length <= maxPoints`. Otherwise the series is cut into
 * `floor(maxPoints / 2)` buckets and each bucket contributes the index of its smallest and of
 * its largest value; the first and last index and every index in `keep` are added.
 *
 * @example
 * ```ts
 * import { downsampleIndices } from "./downsample.ts";
 * const values = Array.from({ length: 10_000 }, (_, i) => Math.sin(i / 50));
 * downsampleIndices(values, 2000, [4321]).length <= 2003; // true
 * ```
 *
 * @param values Series values; NaN and infinities count as extremes so they stay visible.
 * @param maxPoints Display budget (at least 4).
 * @param keep Indices that must survive.
 * @returns Sorted, unique indices.
 */
export function downsampleIndices(
  values: ArrayLike<number>,
  maxPoints: number = DEFAULT_MAX_POINTS,
  keep: Iterable<number> = [],
): number[] {
  const n = values.length;
  if (n <= Math.max(maxPoints, 4)) return Array.from({ length: n }, (_, i) => i);
  const chosen = new Set<number>([0, n - 1]);
  for (const k of keep) if (k >= 0 && k < n) chosen.add(k);
  const buckets = Math.max(2, Math.floor(maxPoints / 2));
  for (let b = 0; b < buckets; b++) {
    const start = Math.floor((b * n) / buckets);
    const end = Math.floor(((b + 1) * n) / buckets);
    if (end <= start) continue;
    let lo = start;
    let hi = start;
    for (let i = start; i < end; i++) {
      const v = values[i];
      // Non-finite values are the most important points of all: keep them as extremes.
      if (!Number.isFinite(v)) {
        lo = i;
        hi = i;
        break;
      }
      if (v < values[lo]) lo = i;
      if (v > values[hi]) hi = i;
    }
    chosen.add(lo);
    chosen.add(hi);
  }
  return [...chosen].sort((x, y) => x - y);
}

/** One point of a min/max envelope. */
export interface BandPoint {
  /** Step. */
  step: number;
  /** Lower edge. */
  lo: number;
  /** Upper edge. */
  hi: number;
}

/**
 * Reduces a band (per-step lower/upper edges) to at most about `maxPoints` points while still
 * covering every original point: each bucket becomes its envelope, drawn at the bucket's first
 * and last step.
 */
export function downsampleBand(
  band: BandPoint[],
  maxPoints: number = DEFAULT_MAX_POINTS,
): BandPoint[] {
  const n = band.length;
  if (n <= Math.max(maxPoints, 4)) return band;
  const buckets = Math.max(2, Math.floor(maxPoints / 2));
  const out: BandPoint[] = [];
  for (let b = 0; b < buckets; b++) {
    const start = Math.floor((b * n) / buckets);
    const end = Math.floor(((b + 1) * n) / buckets);
    if (end <= start) continue;
    let lo = Number.POSITIVE_INFINITY;
    let hi = Number.NEGATIVE_INFINITY;
    for (let i = start; i < end; i++) {
      lo = Math.min(lo, band[i].lo);
      hi = Math.max(hi, band[i].hi);
    }
    out.push({ step: band[start].step, lo, hi });
    if (end - 1 > start) out.push({ step: band[end - 1].step, lo, hi });
  }
  return out;
}
