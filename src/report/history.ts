/**
 * `<results>/history.csv`: one row per comparison per run, appended after each run, so nightly
 * trends survive across runs. Long format keeps the header stable whatever comparisons an
 * experiment has. `deno task parity history` renders the trend chart and a Markdown table
 * ({@linkcode renderHistoryView}).
 *
 * @module
 */

import { parse } from "csv-parse/sync";
import { stringify } from "csv-stringify/sync";
import { historyTrendSpec, type TrendPoint } from "../charts/history_trend.ts";
import { writeChart } from "../charts/render_chart.ts";
import type { RunSummary } from "../types/summary.ts";
import { mdTable } from "./markdown.ts";
import { exact, stat } from "../format/numbers.ts";
import { verdictLabel } from "./_format.ts";
import type { Table } from "./_tables.ts";

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
] as const;

/** One row of `history.csv` (all strings, as stored; empty string for none). */
export type HistoryRow = Record<(typeof HISTORY_COLUMNS)[number], string>;

/** The rows a run contributes: one per comparison, or one row with empty comparison fields. */
export function historyRows(summary: RunSummary): HistoryRow[] {
  const base = {
    time: summary.finished_at ?? summary.started_at ?? new Date().toISOString(),
    experiment: summary.experiment,
    run_id: summary.run_id,
    git_commit: summary.git_commit ?? "",
    verdict: summary.verdict,
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
  }));
}

/** Path of the history file under a results folder. */
export function historyPath(resultsDir: string): string {
  return `${resultsDir.replace(/\/+$/, "")}/history.csv`;
}

/**
 * Appends the run's rows to `<resultsDir>/history.csv`, writing the header when the file is new.
 * Throws when an existing file has a different header (never silently mixes formats).
 *
 * @returns The path of `history.csv`.
 */
export async function appendHistory(resultsDir: string, summary: RunSummary): Promise<string> {
  const path = historyPath(resultsDir);
  await Deno.mkdir(resultsDir, { recursive: true });
  let header = true;
  try {
    const text = await Deno.readTextFile(path);
    if (text.trim() !== "") {
      const first = text.slice(0, text.indexOf("\n") < 0 ? text.length : text.indexOf("\n")).trim();
      if (first !== HISTORY_COLUMNS.join(",")) {
        throw new Error(
          `${path}: unexpected header "${first}" (expected ${HISTORY_COLUMNS.join(",")})`,
        );
      }
      header = false;
      if (!text.endsWith("\n")) await Deno.writeTextFile(path, "\n", { append: true });
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  const csv = stringify(historyRows(summary), { header, columns: [...HISTORY_COLUMNS] });
  await Deno.writeTextFile(path, csv, { append: true });
  return path;
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
  const records = parse(text, {
    columns: true,
    skip_empty_lines: true,
    relax_column_count: true,
  }) as Record<
    string,
    string
  >[];
  return records.map((r) =>
    Object.fromEntries(HISTORY_COLUMNS.map((k) => [k, r[k] ?? ""])) as HistoryRow
  );
}

/** Trend points of history rows (rows without a comparison are left out). */
export function trendPoints(rows: HistoryRow[]): TrendPoint[] {
  return rows.filter((r) => r.comparison !== "").map((r) => ({
    time: r.time,
    experiment: r.experiment,
    run_id: r.run_id,
    comparison: r.comparison,
    verdict: r.comparison_verdict || r.verdict,
    max_abs: r.max_abs === "" ? null : Number(r.max_abs),
    first_divergent_step: r.first_divergent_step === "" ? null : Number(r.first_divergent_step),
  }));
}

/** History rows as a report table, newest first. */
export function historyTable(rows: HistoryRow[]): Table {
  const sorted = [...rows].sort((a, b) => b.time.localeCompare(a.time));
  const v = (s: string) =>
    s === "PASS" || s === "FAIL" || s === "ERROR" || s === "ABSTAIN" ? verdictLabel(s) : (s || "—");
  return {
    id: "history",
    title: "History",
    headers: [
      "time",
      "experiment",
      "run",
      "commit",
      "run verdict",
      "comparison",
      "lane",
      "verdict",
      "max abs",
      "first divergent step",
    ],
    numeric: [false, false, false, false, false, false, false, false, true, true],
    rows: sorted.map((r) =>
      [
        r.time,
        r.experiment,
        r.run_id,
        r.git_commit || "—",
        v(r.verdict),
        r.comparison || "—",
        r.lane || "—",
        v(r.comparison_verdict),
        r.max_abs === "" ? "—" : stat(Number(r.max_abs)),
        r.first_divergent_step === "" ? "—" : exact(Number(r.first_divergent_step)),
      ].map((text) => ({ text }))
    ),
    empty: "No history rows.",
  };
}

/** What {@linkcode renderHistoryView} shows. */
export interface HistoryViewOptions {
  /** Only this experiment's rows. */
  experiment?: string;
  /** Newest rows shown in the table (default 30). */
  limit?: number;
}

/**
 * Renders `<results>/history/history-trend.{vl.json,svg,png}` from `<results>/history.csv` and
 * returns the Markdown that shows it: a title, the newest rows and the chart link. Returns
 * `undefined` when there is no history row to show. This is `deno task parity history`.
 */
export async function renderHistoryView(
  resultsDir: string,
  options: HistoryViewOptions = {},
): Promise<string | undefined> {
  const { experiment, limit = 30 } = options;
  const dir = resultsDir.replace(/\/+$/, "") || "/";
  const all = await readHistory(dir);
  const rows = experiment === undefined ? all : all.filter((r) => r.experiment === experiment);
  if (rows.length === 0) return undefined;
  const title = experiment ? `parity history: ${experiment}` : "parity history";
  const chart = await writeChart(
    `${dir}/history`,
    "history-trend",
    historyTrendSpec(trendPoints(rows), title),
  );
  const table = historyTable(rows);
  const shown = { ...table, rows: table.rows.slice(0, limit) };
  const lines = [`### ${title}\n`, mdTable(shown)];
  if (table.rows.length > limit) {
    lines.push(`\n_${table.rows.length - limit} older rows not shown (--limit)._`);
  }
  lines.push(`\n![parity history](${chart.pngPath})`);
  return lines.join("\n");
}
