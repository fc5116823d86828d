/**
 * Strict metrics readers. Every reader returns a {@link MetricSeries}: ascending steps,
 * step-aligned `Float64Array` values per metric with presence flags, event records (`saved`,
 * `loaded` with digests) and diagnostics with stable codes ({@link READER_CODES}). Formats:
 * `jsonl` (the trainer contract), `deepspeed-csv` (csv_monitor), `log` (named-group regex) and
 * `tensorboard` (event files).
 *
 * @example
 * ```ts
 * import { readMetrics } from "./mod.ts";
 * const series = await readMetrics("metrics.jsonl", { format: "jsonl" });
 * for (const d of series.diagnostics) console.log(d.code, d.message);
 * ```
 *
 * @module
 */

export * from "./series.ts";
export { parseJsonl, parseJsonlBytes, readJsonl } from "./jsonl.ts";
export { type CsvSource, parseDeepspeedCsv, readDeepspeedCsv } from "./deepspeed_csv.ts";
export { DEFAULT_LOG_PATTERN, parseLog, readLog } from "./log.ts";
export { type EventFileSource, parseTensorboard, readTensorboard } from "./tensorboard.ts";
export { readMetrics } from "./read.ts";
export { TENSORS_ERROR_FIELD } from "./tensors_file.ts";
