/**
 * The judge's and the charts' settings with every default resolved: what the resolved plan hands
 * the judge and what summary.json persists (`judge`, `charts`), so `parity report` never re-reads
 * the experiment file. Their own module because both the phase spec and the summary use them.
 *
 * @module
 */

/** The comparison lanes (docs/parity.md, "Lanes"); the schema's `lane:` takes its names from here. */
export const LANES = ["exact", "tolerance", "drift"] as const;

/** A comparison lane. */
export type Lane = typeof LANES[number];

/**
 * An explicit comparison from the experiment's `compare:`, defaults filled in: the output type of
 * `CompareSchema` (`src/experiment/schema.ts` checks at compile time that the two stay equal).
 */
export interface CompareSpec {
  /** Display name (default `a~b`). */
  name?: string;
  /** Reference phase. */
  a: string;
  /** Compared phase. */
  b: string;
  /** Metric. */
  metric: string;
  /** Lane. */
  lane: Lane;
  /** Steps compared. */
  window?: { from: number; to: number };
  /** Tolerance overrides. */
  rtol?: number;
  /** Tolerance overrides. */
  atol?: number;
  /** Tolerance overrides. */
  max_failures?: number;
}

/** The experiment's tolerance lane defaults: fixed, or derived from the noise floor. */
export type ToleranceSpec =
  | { rtol: number; atol: number; max_failures: number }
  | { auto: true; multiplier: number; floor: number; atol: number; max_failures: number };

/** The drift lane thresholds in force (`drift:`, docs/parity.md, "The drift lane"). */
export interface DriftSpec {
  /** Resumed steps judged tightly. */
  early_steps: number;
  /** Allowed early |b - a|, float32 ULPs of a. */
  early_ulp: number;
  /** Allowed later |b - a| over the median step-to-step change of a. */
  envelope: number;
  /** Blocks of the bias test. */
  blocks: number;
  /** Largest |t| of the block means. */
  bias_t: number;
}

/** The judge settings a run was judged with (`summary.json` `judge`), every default resolved. */
export interface JudgeSettings {
  /** Metrics compared by default. */
  metrics: string[];
  /** Explicit comparisons (replace the defaults when non-empty). */
  compare: CompareSpec[];
  /** Tolerance lane settings in force: fixed, or derived from the noise floor (`auto`). */
  tolerance: ToleranceSpec;
  /** Whether the experiment declared `tolerance:` (else the defaults are in force). */
  tolerance_declared: boolean;
  /** Whether the baseline was judged against its golden. */
  golden: boolean;
  /** Drift lane thresholds in force. */
  drift: DriftSpec;
}

/** `summary.json` `charts`: the experiment's `charts:` block, defaults resolved. */
export interface ChartSettings {
  /** Log-scaled loss axes. */
  log_scale: boolean;
  /** Display downsampling: points per series at most. */
  max_points: number;
}
