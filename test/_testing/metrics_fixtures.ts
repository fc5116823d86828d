/**
 * Test helpers shared by the metrics, parity and CLI tests: temp dirs and in-memory series.
 *
 * @module
 */

import type { MetricSeries } from "../../src/metrics/series.ts";

/** Runs `fn` with a fresh temp dir, removed afterwards. */
export async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "parity_test_" });
  try {
    return await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** JSONL text of `records` (one JSON object per line, final newline). */
export function jsonl(records: unknown[]): string {
  return records.map((r) => JSON.stringify(r) + "\n").join("");
}

/** A series with `metrics` (name to values aligned with `steps`; NaN is logged NaN). */
export function seriesOf(
  steps: number[],
  metrics: Record<string, (number | undefined)[]>,
): MetricSeries {
  const values: Record<string, Float64Array> = {};
  const present: Record<string, Uint8Array> = {};
  for (const [name, list] of Object.entries(metrics)) {
    values[name] = Float64Array.from(list, (x) => x ?? Number.NaN);
    present[name] = Uint8Array.from(list, (x) => (x === undefined ? 0 : 1));
  }
  return { steps: Float64Array.from(steps), values, present, events: [], diagnostics: [] };
}
