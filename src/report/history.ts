/**
 * The history store, `<results>/history.csv`: one row per comparison per run, appended after each
 * run, so nightly trends survive across runs. Long format keeps the header stable whatever
 * comparisons an experiment has. The page that shows it is `history_page.ts`.
 *
 * @module
 */

import { parse } from "csv-parse/sync";
import { stringify } from "csv-stringify/sync";
import type { RunSummary } from "../types/mod.ts";
import { relative } from "node:path";
import { comparisonUlp } from "../format/mod.ts";
import { writeTextAtomic } from "../process/mod.ts";

/** Columns of `history.csv`, in order (a contract for CI dashboards: only ever append columns). */
export const HISTORY_COLUMNS = [
  "time",
  "experiment",
  "run_id",
  "git_commit",
  "verdict",
  "comparison",
  "metric",
  "lane",
  "comparison_verdict",
  "max_abs",
  "first_divergent_step",
  // Appended later: files with only the columns above are migrated on the next append.
  "max_ulp",
  "ulp_unit",
  "cause",
  "run_path",
  "config",
] as const;

/** One row of `history.csv` (all strings, as stored; empty string for none). */
export type HistoryRow = Record<(typeof HISTORY_COLUMNS)[number], string>;

/**
 * The rows a run contributes: one per comparison, or one row with empty comparison fields.
 * `runPath` is the run folder relative to the results folder (links from the trend page).
 */
export function historyRows(summary: RunSummary, runPath = ""): HistoryRow[] {
  const base = {
    run_path: runPath,
    time: summary.finished_at ?? summary.started_at ?? new Date().toISOString(),
    experiment: summary.experiment,
    run_id: summary.run_id,
    git_commit: summary.git_commit ?? "",
    verdict: summary.verdict,
    cause: summary.findings?.[0]?.code ?? "",
    config: summary.config ?? "",
  };
  if (summary.comparisons.length === 0) {
    return [{
      ...base,
      comparison: "",
      metric: "",
      lane: "",
      comparison_verdict: "",
      max_abs: "",
      first_divergent_step: "",
      max_ulp: "",
      ulp_unit: "",
    }];
  }
  return summary.comparisons.map((c) => ({
    ...base,
    comparison: c.name,
    metric: c.metric,
    lane: c.lane,
    comparison_verdict: c.verdict,
    max_abs: c.max_abs === null ? "" : String(c.max_abs),
    first_divergent_step: c.first_divergent_step === null ? "" : String(c.first_divergent_step),
    max_ulp: String(comparisonUlp(c)?.value ?? ""),
    ulp_unit: comparisonUlp(c)?.unit ?? "",
  }));
}

/** Path of the history file under a results folder. */
export function historyPath(resultsDir: string): string {
  return `${resultsDir.replace(/\/+$/, "")}/history.csv`;
}

/**
 * Appends the run's rows to `<resultsDir>/history.csv`, writing the header when the file is new.
 * Throws when an existing file has another header; a file written before columns were appended
 * is migrated first (never silently mixes formats).
 *
 * @param runDir The run folder, recorded relative to `resultsDir` for the trend page's links.
 * @returns The path of `history.csv`.
 */
export async function appendHistory(
  resultsDir: string,
  summary: RunSummary,
  runDir?: string,
): Promise<string> {
  const path = historyPath(resultsDir);
  await Deno.mkdir(resultsDir, { recursive: true });
  let header = true;
  try {
    const text = await Deno.readTextFile(path);
    if (text.trim() !== "") {
      const first = text.slice(0, text.indexOf("\n") < 0 ? text.length : text.indexOf("\n")).trim();
      const columns = first.split(",");
      const prefix = columns.every((name, i) => HISTORY_COLUMNS[i] === name);
      if (!prefix) {
        throw new Error(
          `${path}: unexpected header "${first}" (expected ${HISTORY_COLUMNS.join(",")})`,
        );
      }
      header = false;
      if (columns.length < HISTORY_COLUMNS.length) await _migrateHistory(path);
      else if (!text.endsWith("\n")) await Deno.writeTextFile(path, "\n", { append: true });
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  const runPath = runDir === undefined ? "" : relative(resultsDir, runDir).split("\\").join("/");
  const csv = stringify(historyRows(summary, runPath), {
    header,
    columns: [...HISTORY_COLUMNS],
  });
  await _appendWhole(path, csv);
  return path;
}

/**
 * Appends `text`, or nothing: a write cut short (a full disk) is truncated away again, so
 * history.csv never keeps half a row.
 */
async function _appendWhole(path: string, text: string): Promise<void> {
  const size = await Deno.stat(path).then((info) => info.size, () => 0);
  try {
    await Deno.writeTextFile(path, text, { append: true });
  } catch (error) {
    await Deno.truncate(path, size).catch(() => {});
    throw error;
  }
}

/**
 * Rewrites a history file written before columns were appended with today's header (the old rows
 * keep their values, new columns empty), atomically, so no row is lost or misread.
 */
async function _migrateHistory(path: string): Promise<void> {
  const rows = _parseHistory(await Deno.readTextFile(path));
  await writeTextAtomic(path, stringify(rows, { header: true, columns: [...HISTORY_COLUMNS] }));
}

function _parseHistory(text: string): HistoryRow[] {
  const records = parse(text, {
    columns: true,
    skip_empty_lines: true,
    relax_column_count: true,
  }) as Record<string, string>[];
  return records.map((r) =>
    Object.fromEntries(HISTORY_COLUMNS.map((k) => [k, r[k] ?? ""])) as HistoryRow
  );
}

/** Reads `<resultsDir>/history.csv` (empty when absent). */
export async function readHistory(resultsDir: string): Promise<HistoryRow[]> {
  let text: string;
  try {
    text = await Deno.readTextFile(historyPath(resultsDir));
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
  return _parseHistory(text);
}

/** What the previous run of an experiment recorded, by comparison name. */
export interface PreviousRun {
  /** Its run id. */
  run_id: string;
  /** Its verdict. */
  verdict: string;
  /** Its root-cause code ("" when none or not recorded). */
  cause: string;
  /** Its rows by comparison name. */
  comparisons: Map<string, HistoryRow>;
}

/**
 * The newest run of `run.experiment` in `rows` that is not `run.run_id`, finished before
 * `run.started_at` (rows of a re-rendered run's successors are not "previous") and, when the run
 * records its resolved configuration (`config`), ran that same configuration: a run under other
 * `--set` values is another experiment for this purpose. Null when there is none.
 */
export function previousRun(
  rows: HistoryRow[],
  run:
    & Pick<RunSummary, "experiment" | "run_id">
    & Partial<Pick<RunSummary, "started_at" | "config">>,
): PreviousRun | null {
  const before = run.started_at;
  const older = rows.filter((r) =>
    r.experiment === run.experiment && r.run_id !== run.run_id &&
    (before === undefined || r.time < before) &&
    (run.config === undefined || r.config === run.config)
  );
  if (older.length === 0) return null;
  const newest = older.reduce((x, y) => (y.time > x.time ? y : x));
  const own = older.filter((r) => r.run_id === newest.run_id);
  return {
    run_id: newest.run_id,
    verdict: newest.verdict,
    cause: newest.cause,
    comparisons: new Map(own.filter((r) => r.comparison !== "").map((r) => [r.comparison, r])),
  };
}
