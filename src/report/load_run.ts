/**
 * Loads a finished run folder — `summary.json`, `losses.csv` and the phase artifacts — into one
 * value every report writer reads. Nothing is recomputed from training: re-rendering never needs a
 * retrain, and the experiment file is never re-read (summary.json records the chart settings).
 *
 * @module
 */

import {
  DEFAULT_MAX_POINTS,
  type LossTable,
  parseLossesCsv,
  type Series,
  seriesOf,
} from "../charts/mod.ts";
import { type ComparisonSummary, readSummary, type RunSummary } from "../types/mod.ts";
import { stripAnsi, tailLines } from "./_format.ts";
import { type PreviousRun, previousRun, readHistory } from "./history.ts";
import { dirname } from "node:path";

/** Lines of log kept for ERROR phases. */
export const LOG_TAIL_LINES = 40;

/** A run folder loaded for rendering. */
export interface LoadedRun {
  /** The run folder. */
  runDir: string;
  /** `summary.json`. */
  summary: RunSummary;
  /** `losses.csv`; an empty table when the file is missing. */
  losses: LossTable;
  /** `summary.json` `charts.log_scale` (false in older summaries). */
  logScale: boolean;
  /** `summary.json` `charts.max_points` (the chart default in older summaries). */
  maxPoints: number;
  /** Series of `metric` for `phase`: `losses.csv` for `loss`, `metrics.jsonl` otherwise. */
  series(phase: string, metric: string): Series;
  /** Log tail of a phase that did not end ok (summary's `log_tail`, else stderr/stdout tail). */
  logTail(phase: string): string;
  /**
   * The experiment's run before this one, from the results folder's `history.csv` (two levels
   * up); null for a first run or a run folder moved out of its results folder.
   */
  previous: PreviousRun | null;
}

async function readTextOrNull(path: string): Promise<string | null> {
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}

/** Step records of a `metrics.jsonl` file, by metric name. */
export function parseMetricsJsonl(text: string): Map<string, Series> {
  const out = new Map<string, Series>();
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    let record: Record<string, unknown>;
    try {
      record = JSON.parse(line);
    } catch {
      continue; // a torn last line of a killed trainer is not a metric
    }
    if (typeof record !== "object" || record === null || "event" in record) continue;
    const step = record.step;
    if (typeof step !== "number") continue;
    for (const [key, value] of Object.entries(record)) {
      if (key === "step" || typeof value !== "number") continue;
      let series = out.get(key);
      if (!series) out.set(key, series = { steps: [], values: [] });
      series.steps.push(step);
      series.values.push(value);
    }
  }
  return out;
}

/** The phases whose `metrics.jsonl` a non-loss comparison needs. */
function metricPhases(comparisons: ComparisonSummary[]): Set<string> {
  const phases = new Set<string>();
  for (const c of comparisons) {
    if (c.metric !== "loss") {
      phases.add(c.a);
      phases.add(c.b);
    }
  }
  return phases;
}

/**
 * Reads a run folder. Throws when `summary.json` is missing or not schema version 1.
 */
export async function loadRun(runDir: string): Promise<LoadedRun> {
  const summary = await readSummary(runDir);
  if (summary === undefined) {
    throw new Error(`${runDir}: no summary.json (not a finished run folder)`);
  }
  if (summary.schema_version !== 1) {
    throw new Error(`${runDir}/summary.json: unsupported schema_version ${summary.schema_version}`);
  }
  const lossesText = await readTextOrNull(`${runDir}/losses.csv`);
  const losses: LossTable = lossesText === null
    ? { steps: [], phases: [], columns: {} }
    : parseLossesCsv(lossesText);
  const logScale = summary.charts?.log_scale === true;
  const mp = summary.charts?.max_points;
  const maxPoints = typeof mp === "number" && Number.isInteger(mp) && mp > 0
    ? mp
    : DEFAULT_MAX_POINTS;
  const metrics = new Map<string, Map<string, Series>>();
  for (const phase of metricPhases(summary.comparisons)) {
    const text = await readTextOrNull(`${runDir}/phases/${phase}/metrics.jsonl`);
    metrics.set(phase, text === null ? new Map() : parseMetricsJsonl(text));
  }
  const tails = new Map<string, string>();
  for (const phase of summary.phases) {
    if (phase.status === "ok") continue;
    let tail = phase.log_tail ?? "";
    if (tail.trim() === "") {
      for (const file of ["stderr.log", "stdout.log"]) {
        const text = await readTextOrNull(`${runDir}/phases/${phase.name}/${file}`);
        if (text !== null && text.trim() !== "") {
          tail = tailLines(text, LOG_TAIL_LINES);
          break;
        }
      }
    }
    tails.set(phase.name, stripAnsi(tailLines(tail, LOG_TAIL_LINES)));
  }
  const history = await readHistory(dirname(dirname(runDir)));
  const previous = previousRun(history, summary);
  return {
    runDir,
    summary,
    previous,
    losses,
    logScale,
    maxPoints,
    series(phase, metric) {
      if (metric === "loss") return seriesOf(losses, phase);
      return metrics.get(phase)?.get(metric) ?? { steps: [], values: [] };
    },
    logTail(phase) {
      return tails.get(phase) ?? "";
    },
  };
}
