/**
 * The history page: `deno task parity history` renders `<results>/history.csv` (the store,
 * `history.ts`) as a trend chart, an HTML page and a Markdown table
 * ({@linkcode renderHistoryView}).
 *
 * @module
 */

import { historyTrendSpec, type TrendPoint, writeChart } from "../charts/mod.ts";
import { exact, stat, ulps } from "../format/mod.ts";
import { escapeHtml } from "./_format.ts";
import { chartBlock, htmlPage } from "./_page.ts";
import { type Cell, type Table, verdictCell } from "./_tables.ts";
import { writeTextAtomic } from "../process/mod.ts";
import { type HistoryRow, readHistory } from "./history.ts";
import { htmlTable } from "./html.ts";
import { mdTable } from "./markdown.ts";

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
function historyTable(rows: HistoryRow[], links = false): Table {
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
