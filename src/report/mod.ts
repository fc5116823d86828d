/**
 * Reports of a parity run, all re-renderable from the stored artifacts of a run folder:
 *
 * - `report.md` ({@link renderMarkdown}) — the PR comment, first line the verdict, with the
 *   `<!-- parity-report:<experiment> -->` marker a CI job uses to update its comment in place;
 * - `report.html` ({@link renderHtml}) — one offline file with interactive vega-embed charts;
 * - `junit.xml` ({@link renderJunit}) — results for CI test reporters;
 * - `history.csv` ({@link appendHistory}, {@link renderHistoryView}) and suite indexes
 *   ({@link writeSuiteIndex}).
 *
 * {@link renderRun} writes everything for one run folder (`deno task parity report <run-dir>`).
 *
 * @example
 * ```ts ignore
 * import { appendHistory, renderRun } from "./mod.ts";
 * await renderRun("results/quickstart/20261129T101500Z-ab12cd");
 * ```
 *
 * @module
 */

export { type LoadedRun, loadRun, LOG_TAIL_LINES, parseMetricsJsonl } from "./load_run.ts";
export {
  type ChartLink,
  chartLinks,
  codeBlock,
  COMMENT_BUDGET,
  GITHUB_COMMENT_LIMIT,
  imageBaseUrlProblem,
  type MarkdownOptions,
  mdCode,
  mdTable,
  mdText,
  renderMarkdown,
  reportMarker,
  verdictLine,
} from "./markdown.ts";
export { htmlTable, renderHtml } from "./html.ts";
export { type JunitRun, renderJunit, xmlAttr, xmlText } from "./junit.ts";
export {
  appendHistory,
  HISTORY_COLUMNS,
  historyPath,
  type HistoryRow,
  historyRows,
  readHistory,
} from "./history.ts";
export { type HistoryViewOptions, renderHistoryView, trendPoints } from "./history_page.ts";
export { compactUtc, SUITE_MARKER, type SuiteEntry, writeSuiteIndex } from "./suite.ts";
export { renderRun, type RenderRunOptions, resolveRunDir, runCharts } from "./render_run.ts";
export type { Cell, Table } from "./_tables.ts";
