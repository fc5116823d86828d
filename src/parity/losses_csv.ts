/**
 * `losses.csv`: one column per phase, one row per step any phase logged the metric at, values
 * with full round-trip precision (`String(x)`), empty cells where a phase has no value.
 *
 * @module
 */

import { DEFAULT_METRIC } from "../types/mod.ts";
import type { MetricSeries } from "../metrics/mod.ts";

/**
 * Renders `step,<phase>...` for `metric` (default `loss`): the `baseline` column first when
 * present, then the map's order.
 *
 * @example
 * ```ts
 * import { lossesCsv } from "./losses_csv.ts";
 * await Deno.writeTextFile("losses.csv", lossesCsv(evaluation.series));
 * ```
 */
export function lossesCsv(series: Map<string, MetricSeries>, metric = DEFAULT_METRIC): string {
  const names = [...series.keys()];
  const baseline = names.indexOf("baseline");
  if (baseline > 0) names.unshift(...names.splice(baseline, 1));
  const columns = names.map((name) => series.get(name) as MetricSeries);
  const all = new Set<number>();
  for (const s of columns) {
    const present = s.present[metric];
    if (present === undefined) continue;
    for (let i = 0; i < s.steps.length; i++) if (present[i] === 1) all.add(s.steps[i]);
  }
  const steps = Float64Array.from(all).sort();
  const cursors = new Array<number>(columns.length).fill(0);
  const lines: string[] = [["step", ...names].join(",")];
  const cells = new Array<string>(columns.length + 1);
  for (const step of steps) {
    cells[0] = String(step);
    for (let c = 0; c < columns.length; c++) {
      const s = columns[c];
      let i = cursors[c];
      while (i < s.steps.length && s.steps[i] < step) i++;
      cursors[c] = i;
      const present = s.present[metric];
      cells[c + 1] = present !== undefined && i < s.steps.length && s.steps[i] === step &&
          present[i] === 1
        ? String(s.values[metric][i])
        : "";
    }
    lines.push(cells.join(","));
  }
  return lines.join("\n") + "\n";
}
