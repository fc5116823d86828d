/**
 * `readMetrics(path, options)`: one entry point over every supported format.
 *
 * @module
 */

import { DEFAULT_METRICS_FORMAT } from "../types/mod.ts";
import { readDeepspeedCsv } from "./deepspeed_csv.ts";
import { readJsonl } from "./jsonl.ts";
import { readLog } from "./log.ts";
import type { MetricSeries, ReadOptions } from "./series.ts";
import { readTensorboard } from "./tensorboard.ts";

/**
 * Reads metrics from `path` in `options.format` (default `jsonl`). Never throws for bad or
 * missing content: problems are in the returned series' `diagnostics`.
 *
 * @example
 * ```ts
 * import { readMetrics } from "./read.ts";
 * const series = await readMetrics("results/x/phases/baseline/metrics.jsonl");
 * series.values.loss; // Float64Array aligned with series.steps
 * ```
 */
export function readMetrics(path: string, options: ReadOptions = {}): Promise<MetricSeries> {
  switch (options.format ?? DEFAULT_METRICS_FORMAT) {
    case "jsonl":
      return readJsonl(path, options.loss);
    case "deepspeed-csv":
      return readDeepspeedCsv(path, options);
    case "log":
      return readLog(path, options.pattern);
    case "tensorboard":
      return readTensorboard(path, options);
  }
}
