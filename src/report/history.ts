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
import { relative } from "node:path";
import { mdTable } from "./markdown.ts";
import { comparisonUlp, exact, stat, ulps } from "../format/numbers.ts";
import { escapeHtml } from "./_format.ts";
import { chartBlock, htmlPage } from "./_page.ts";
import { htmlTable } from "./html.ts";
import { type Cell, type Table, verdictCell } from "./_tables.ts";
import { writeTextAtomic } from "./_write.ts";

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
  const tmp = `${path}.${crypto.randomUUID().slice(0, 8)}.tmp`;
  await Deno.writeTextFile(tmp, stringify(rows, { header: true, columns: [...HISTORY_COLUMNS] }));
  await Deno.rename(tmp, path);
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
 * The newest run of `experiment` in `rows` that is not `runId` and finished before `before` (ISO
 * time; rows of a re-rendered run's successors are not "previous"). Null when there is none.
 */
export function previousRun(
  rows: HistoryRow[],
  experiment: string,
  runId: string,
  before?: string,
): PreviousRun | null {
  const older = rows.filter((r) =>
    r.experiment === experiment && r.run_id !== runId && (before === undefined || r.time < before)
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
    max_ulp: r.max_ulp === "" ? null : Number(r.max_ulp),
    ulp_unit: r.ulp_unit === "f32" || r.ulp_unit === "f64" ? r.ulp_unit : null,
    href: runLink(r),
  }));
}

/** A run's report.html relative to `<results>/history/`, null when the row has no run path. */
function runLink(r: HistoryRow): string | null {
  return r.run_path === "" ? null : `../${encodeURI(r.run_path)}/report.html`;
}

/**
 * History rows as a report table, newest first. With `links`, the run cell links to the run's
 * report.html (relative to `<results>/history/`).
 */
export function historyTable(rows: HistoryRow[], links = false): Table {
  const sorted = [...rows].sort((a, b) => b.time.localeCompare(a.time));
  const v = (s: string): Cell =>
    s === "PASS" || s === "FAIL" || s === "ERROR" || s === "ABSTAIN"
      ? verdictCell(s)
      : { text: s || "—" };
  return {
    id: "history",
    title: "History",
    headers: [
      "time",
      "experiment",
      "run",
      "commit",
      "run verdict",
      "cause",
      "comparison",
      "lane",
      "verdict",
      "max abs",
      "max ULP",
      "first divergent step",
    ],
    numeric: [false, false, false, false, false, false, false, false, false, true, true, true],
    rows: sorted.map((r) => {
      const href = links ? runLink(r) : null;
      const ulp = r.max_ulp === "" || (r.ulp_unit !== "f32" && r.ulp_unit !== "f64")
        ? "—"
        : ulps(Number(r.max_ulp), r.ulp_unit);
      return [
        { text: r.time },
        { text: r.experiment },
        href ? { text: r.run_id, href } : { text: r.run_id },
        { text: r.git_commit ? r.git_commit.slice(0, 12) : "—" },
        v(r.verdict),
        { text: r.cause || "—" },
        { text: r.comparison || "—" },
        { text: r.lane || "—" },
        v(r.comparison_verdict),
        { text: r.max_abs === "" ? "—" : stat(Number(r.max_abs)) },
        { text: ulp },
        { text: r.first_divergent_step === "" ? "—" : exact(Number(r.first_divergent_step)) },
      ];
    }),
    empty: "No history rows.",
  };
}

/** What {@linkcode renderHistoryView} shows. */
export interface HistoryViewOptions {
  /** Only this experiment's rows. */
  experiment?: string;
  /** Newest rows shown in the Markdown table (default 30; the HTML page lists every row). */
  limit?: number;
  /** The rows of `history.csv` when the caller has read them already. */
  rows?: HistoryRow[];
}

/** What {@linkcode renderHistoryView} wrote and the Markdown it returns. */
export interface HistoryView {
  /** Title and the newest rows as a Markdown table. */
  markdown: string;
  /** `<results>/history/index.html`: the interactive trend, each point linking to its run. */
  html: string;
  /** `<results>/history/history-trend.png`. */
  png: string;
}

/**
 * Renders `<results>/history/history-trend.{vl.json,svg,png}` and `<results>/history/index.html`
 * from `<results>/history.csv`. Returns `undefined` when there is no history row to show. This is
 * `deno task parity history`; suite indexes link to the page.
 */
export async function renderHistoryView(
  resultsDir: string,
  options: HistoryViewOptions = {},
): Promise<HistoryView | undefined> {
  const { experiment, limit = 30 } = options;
  const dir = resultsDir.replace(/\/+$/, "") || "/";
  const all = options.rows ?? await readHistory(dir);
  const rows = experiment === undefined ? all : all.filter((r) => r.experiment === experiment);
  if (rows.length === 0) return undefined;
  const title = experiment ? `parity history: ${experiment}` : "parity history";
  const spec = historyTrendSpec(trendPoints(rows), title);
  const chart = await writeChart(`${dir}/history`, "history-trend", spec);
  const table = historyTable(rows);
  const shown = { ...table, rows: table.rows.slice(0, limit) };
  const lines = [`### ${title}\n`, mdTable(shown)];
  if (table.rows.length > limit) {
    lines.push(`\n_${table.rows.length - limit} older rows not shown (--limit)._`);
  }
  const html = `${dir}/history/index.html`;
  const page = await htmlPage(title, [
    `<h1>${escapeHtml(title)}</h1>`,
    `<p class="headline">${rows.length} rows from ${
      new Set(rows.map((r) => r.run_id)).size
    } runs; click a point to open its run's report.</p>`,
    chartBlock(0, "history-trend", spec),
    `<h2 id="history">History</h2>`,
    htmlTable(historyTable(rows, true)),
  ], true);
  await writeTextAtomic(html, page);
  return { markdown: lines.join("\n"), html, png: chart.pngPath };
}
