/**
 * Every default of how a run is judged and drawn, in one place (the lowest layer, so the experiment
 * schema, `parity compare` and the readers of older run folders share it): the schema's
 * `.default()`s and descriptions read these, and `resolvePlan` (src/experiment) fills the resolved plan's
 * all-required judge and chart settings from them. Nothing downstream of the plan has a default
 * of its own.
 *
 * @module
 */

/** The fixed tolerance lane in force when the experiment sets no `tolerance:`. */
export const TOLERANCE_DEFAULTS = Object.freeze({ rtol: 1e-4, atol: 0, max_failures: 0 });

/**
 * The rule that turns a measured noise floor into a relative tolerance,
 * `max(max_rel_deviation × multiplier, floor)` (docs/parity.md, "Noise floor, ABSTAIN and
 * `tolerance: auto`"). It judges every default exact comparison a non-identical floor silences,
 * and is what `tolerance: {auto: true}` leaves out. The multiplier 10 covers the resume's own
 * noise (a handful of repeats over a few dozen steps sees most, not all, of the spread) while a
 * resume bug (lost momentum, a skipped RNG restore) stays orders of magnitude above it; the floor
 * is 8 float32 ULPs relative (2^-20 ≈ 9.5e-7), so a tiny or zero spread never makes a tolerance
 * tighter than float32 arithmetic.
 */
export const NOISE_RTOL_RULE = Object.freeze({ multiplier: 10, floor: 2 ** -20 });

/** `tolerance: {auto: true}` settings the experiment leaves out. */
export const AUTO_TOLERANCE_DEFAULTS = Object.freeze({
  ...NOISE_RTOL_RULE,
  atol: 0,
  max_failures: 0,
});

/** Drift lane thresholds (`drift:`; measured on the reference trainer, docs/parity.md). */
export const DRIFT_DEFAULTS = Object.freeze({
  early_steps: 10,
  early_ulp: 16,
  envelope: 1,
  blocks: 10,
  bias_t: 5,
});

/** Chart settings (`charts:`); display only, never used for judging. */
export const CHART_DEFAULTS = Object.freeze({ log_scale: false, max_points: 2000 });

/** The metric every default comparison judges. */
export const DEFAULT_METRIC = "loss";

/** Seconds before a phase's process group is stopped (`timeout:` of a program, a preset's tools). */
export const DEFAULT_PHASE_TIMEOUT_S = 3600;

/** Bytes per element of the plan's transfer sizes (`plan_sync.element_size`: fp32). */
export const DEFAULT_ELEMENT_SIZE = 4;

/** How a trainer's metrics are read when neither `metrics.format` nor its preset says. */
export const DEFAULT_METRICS_FORMAT = "jsonl" as const;

/** Where goldens are filed and looked up (`--goldens`), relative to the working folder. */
export const DEFAULT_GOLDENS_DIR = "experiments/goldens";
