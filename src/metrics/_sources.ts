// The "file or folder of sources" skeleton of the metric readers: a path names one file, or a
// folder whose files `accept` takes (read in name order); a path that cannot be read is a series
// holding only its `metrics-missing-file` diagnostic. The sources are parsed into one series.

import { SeriesBuilder } from "./_builder.ts";
import { unreadable } from "./jsonl.ts";
import type { MetricSeries, ReadOptions } from "./series.ts";

/**
 * Reads the sources `path` names and parses them. Without `accept` the path is one file only;
 * with it, a folder gives each file `accept` takes, sorted by name. `load` reads one file, named
 * in diagnostics by its base name.
 */
export async function readSources<S>(
  path: string,
  accept: ((name: string) => boolean) | null,
  load: (name: string, file: string) => Promise<S>,
  parse: (sources: S[]) => MetricSeries,
): Promise<MetricSeries> {
  const sources: S[] = [];
  try {
    if (accept !== null && (await Deno.stat(path)).isDirectory) {
      const names: string[] = [];
      for await (const entry of Deno.readDir(path)) {
        if (entry.isFile && accept(entry.name)) names.push(entry.name);
      }
      for (const name of names.sort()) sources.push(await load(name, `${path}/${name}`));
    } else {
      sources.push(await load(path.split("/").pop() ?? path, path));
    }
  } catch (error) {
    return unreadable(path, error);
  }
  return parse(sources);
}

/**
 * Parses sources into one series, each by `readOne`. Steps count `unit` unless
 * `options.step_unit` says otherwise; samples are divided by `options.samples_per_step` (required
 * then), which `readOne` is given.
 */
export function parseSources<S>(
  sources: S[],
  options: ReadOptions,
  unit: "step" | "samples",
  readOne: (builder: SeriesBuilder, source: S, perStep: number | undefined) => void,
): MetricSeries {
  const builder = new SeriesBuilder(options.loss);
  const stepUnit = options.step_unit ?? unit;
  const perStep = options.samples_per_step;
  builder.checkSamplesPerStep(stepUnit, perStep);
  for (const source of sources) {
    builder.startSource();
    readOne(builder, source, stepUnit === "samples" ? perStep : undefined);
  }
  return builder.finish();
}
