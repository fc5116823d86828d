/**
 * The common shape every metrics reader returns: columnar, step-aligned typed arrays (fast to
 * compare), the event records (`saved` / `loaded` with state digests), and the diagnostics found
 * while reading. Readers never throw on bad content: they describe it.
 *
 * @module
 */

import type { Diagnostic } from "../types/mod.ts";

/** Metrics source formats (experiment `metrics.format`). */
export type MetricsFormat = "jsonl" | "deepspeed-csv" | "log" | "tensorboard";

/** One `{"event": ...}` record of a metrics file. */
export interface EventRecord {
  /** Event name, e.g. `saved` or `loaded`. */
  event: string;
  /** The record's `step`, or null when it has none (or it is not an integer). */
  step: number | null;
  /** 1-based line (or record) number in the source. */
  line: number;
  /** The whole record as parsed (for `digests`, `micro_step`, `grad_accum`, ...). */
  fields: Record<string, unknown>;
}

/**
 * Metrics of one phase. `steps` is strictly ascending; `values[m][i]` is metric `m` at
 * `steps[i]`, NaN where absent; `present[m][i]` is 1 where the step's record carried `m` (so a
 * NaN the trainer logged is told apart from an absent value).
 */
export interface MetricSeries {
  /** Strictly ascending step numbers. */
  steps: Float64Array;
  /** Metric name to values aligned with `steps`. */
  values: Record<string, Float64Array>;
  /** Metric name to presence flags aligned with `steps`. */
  present: Record<string, Uint8Array>;
  /** Event records in file order. */
  events: EventRecord[];
  /** Findings while reading (codes in {@link READER_CODES}). */
  diagnostics: Diagnostic[];
}

/** Options of {@link MetricSeries} readers (mirrors the experiment's `metrics:` block). */
export interface ReadOptions {
  /** Source format; `jsonl` by default. */
  format?: MetricsFormat;
  /** `log` format: a regex with named groups `step` and `loss` (other named groups are metrics). */
  pattern?: string;
  /** `deepspeed-csv`: what the step column counts. */
  step_unit?: "step" | "samples";
  /** `deepspeed-csv` with samples: samples per optimizer step (global batch). */
  samples_per_step?: number;
  /**
   * The metric that is the loss (a TensorBoard tag, CSV column or JSONL key), when it is not
   * named `loss`: it is read as `loss`, and no alias rule is tried (`metrics.loss`).
   */
  loss?: string;
}

/**
 * Stable diagnostic codes the readers emit. Every `error` one makes any comparison that uses
 * the phase ERROR at best (docs/parity.md).
 */
export const READER_CODES = {
  /** The metrics file or folder does not exist or cannot be read. */
  missing: "metrics-missing-file",
  /** No step record at all. */
  empty: "metrics-empty",
  /** A line that is not JSON (or not an object) before the last line. */
  unparseable: "metrics-unparseable-line",
  /** The last line cannot be parsed (the writer was cut off). */
  truncated: "metrics-truncated-last-line",
  /** A metric is NaN or infinite (`NaN`/`Infinity` literals or `"nan"`/`"inf"` strings). */
  nonFinite: "metrics-non-finite",
  /** `loss` is present but not a number. */
  nonNumeric: "metrics-non-numeric",
  /** A step record without `loss`. */
  missingLoss: "metrics-missing-loss",
  /** A record with no usable integer `step` (and not an event). */
  invalidStep: "metrics-invalid-step",
  /** The same step logged twice with identical values (info). */
  duplicateSame: "metrics-duplicate-step",
  /** The same step logged twice with different values. */
  duplicateConflict: "metrics-duplicate-step-conflict",
  /** A step lower than or equal to an earlier one, in one source file. */
  backwards: "metrics-steps-backwards",
  /** deepspeed-csv: a header row repeated mid-file (a resumed writer appended; info). */
  repeatedHeader: "metrics-repeated-header",
  /** deepspeed-csv: a samples count that is not a whole number of optimizer steps. */
  samplesNotAligned: "metrics-samples-not-aligned",
  /** deepspeed-csv: steps counted in samples but no samples_per_step given. */
  samplesPerStepMissing: "metrics-samples-per-step-missing",
  /** `loss` was taken from another metric (e.g. `train_loss`, `lm loss`) (info). */
  lossAlias: "metrics-loss-alias",
  /**
   * No `loss`, and several metrics the alias rule could take (e.g. HF's `train/loss` and
   * `train/train_loss`): none is taken; `metrics.loss` names one.
   */
  lossAmbiguous: "metrics-loss-ambiguous",
  /** tensorboard: a record whose framing or checksum is wrong. */
  corruptRecord: "metrics-corrupt-record",
  /** log: the pattern is not a valid regex or lacks the `step` group. */
  badPattern: "metrics-bad-pattern",
  /** jsonl: a line longer than {@link MAX_METRICS_LINE_BYTES}; skipped unread. */
  lineTooLong: "metrics-line-too-long",
  /** jsonl: an event's `tensors_file` is outside the folder, unreadable or malformed (warning). */
  tensorsFile: "metrics-tensors-file",
} as const;

/** Longest metrics line read (1 MiB); a longer one is a `metrics-line-too-long` error. */
export const MAX_METRICS_LINE_BYTES = 1 << 20;

/** An empty series carrying one diagnostic (used when nothing can be read). */
export function emptySeries(diagnostics: Diagnostic[] = []): MetricSeries {
  return { steps: new Float64Array(0), values: {}, present: {}, events: [], diagnostics };
}

/** Index of `step` in `series.steps` (binary search), or -1. */
export function indexOfStep(series: MetricSeries, step: number): number {
  const steps = series.steps;
  let lo = 0;
  let hi = steps.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const s = steps[mid];
    if (s === step) return mid;
    if (s < step) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/** Value of `metric` at `step`: a number (possibly NaN as logged), or undefined when absent. */
export function valueAt(series: MetricSeries, metric: string, step: number): number | undefined {
  const i = indexOfStep(series, step);
  if (i < 0) return undefined;
  const present = series.present[metric];
  if (!present || present[i] === 0) return undefined;
  return series.values[metric][i];
}

/** True when some diagnostic of the series has level `error`. */
export function hasErrors(series: MetricSeries): boolean {
  return series.diagnostics.some((d) => d.level === "error");
}
