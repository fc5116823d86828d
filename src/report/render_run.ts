/**
 * Re-renders every output of a finished run from its stored artifacts: `charts/*`,
 * `report.md`, `report.html` and `junit.xml`. This is what `deno task parity report <run-dir>` does,
 * so a report change never needs a retrain.
 *
 * @module
 */

import { buildRunCharts, type NamedChart, writeChart } from "../charts/mod.ts";
import { renderHtml } from "./html.ts";
import { renderJunit } from "./junit.ts";
import { type LoadedRun, loadRun } from "./load_run.ts";
import { chartLinks, renderMarkdown } from "./markdown.ts";
import { writeTextAtomic } from "../process/mod.ts";

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** Run-relative paths of the phase logs that exist (the reports link only to these). */
async function existingLogs(run: LoadedRun): Promise<Set<string>> {
  const found = new Set<string>();
  for (const phase of run.summary.phases) {
    for (const file of ["stderr.log", "stdout.log"]) {
      const rel = `phases/${phase.name}/${file}`;
      if (await exists(`${run.runDir}/${rel}`)) found.add(rel);
    }
  }
  return found;
}

/** Removes chart files of an earlier render that the new chart set no longer has. */
async function pruneCharts(dir: string, keep: Set<string>): Promise<void> {
  try {
    for await (const entry of Deno.readDir(dir)) {
      const stem = entry.name.replace(/\.(vl\.json|svg|png)$/, "");
      if (entry.isFile && stem !== entry.name && !keep.has(stem)) {
        await Deno.remove(`${dir}/${entry.name}`);
      }
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}

/** The charts of a loaded run (specs only; nothing written). */
export function runCharts(run: LoadedRun): NamedChart[] {
  return buildRunCharts({
    summary: run.summary,
    losses: run.losses,
    metricSeries: (phase, metric) => run.series(phase, metric),
    logScale: run.logScale,
    maxPoints: run.maxPoints,
  });
}

/** Options of {@link renderRun}. */
export interface RenderRunOptions {
  /** An earlier run folder whose identical charts may be copied instead of rendered. */
  reuseFrom?: string;
  /** The results folder's published URL: report.md links become absolute (docs/reports.md). */
  imageBaseUrl?: string;
}

/**
 * Writes `report.md`, `report.html`, `junit.xml` and `charts/<name>.{vl.json,svg,png}` into
 * `runDir` from its `summary.json`, `losses.csv` and phase logs.
 * Does not touch `history.csv` (re-rendering must not add history rows).
 *
 * @param runDir `<results>/<experiment>/<run-id>`.
 * @param options Where identical charts may be reused from; the image base URL.
 */
export async function renderRun(runDir: string, options: RenderRunOptions = {}): Promise<void> {
  const run = await loadRun(runDir);
  const charts = runCharts(run);
  const chartDir = `${runDir}/charts`;
  const reuseFrom = options.reuseFrom ? `${options.reuseFrom}/charts` : undefined;
  for (const chart of charts) await writeChart(chartDir, chart.name, chart.spec, { reuseFrom });
  await pruneCharts(chartDir, new Set(charts.map((c) => c.name)));
  const files = await existingLogs(run);
  await writeTextAtomic(
    `${runDir}/report.md`,
    renderMarkdown(run, chartLinks(charts), files, {
      imageBaseUrl: options.imageBaseUrl,
    }),
  );
  await writeTextAtomic(`${runDir}/report.html`, await renderHtml(run, charts, files));
  await writeTextAtomic(`${runDir}/junit.xml`, renderJunit([run]));
}

/**
 * Resolves a user-given run path: a run folder, or an experiment folder / `latest` entry naming
 * the newest run (a symlink or a file holding the run id).
 */
export async function resolveRunDir(path: string): Promise<string> {
  const clean = path.replace(/\/+$/, "") || path;
  if (await exists(`${clean}/summary.json`)) return clean;
  for (const latest of [clean, `${clean}/latest`]) {
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(latest);
    } catch {
      continue;
    }
    if (info.isFile) {
      const id = (await Deno.readTextFile(latest)).trim();
      const dir = `${latest.replace(/\/[^/]*$/, "")}/${id}`;
      if (id !== "" && !id.includes("/") && await exists(`${dir}/summary.json`)) return dir;
    } else if (info.isDirectory && latest !== clean && await exists(`${latest}/summary.json`)) {
      return latest;
    }
  }
  throw new Deno.errors.NotFound(`${path}: not a run folder (no summary.json)`);
}
