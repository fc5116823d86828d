/**
 * `report.md`: the GitHub-flavoured report a CI job posts as one pull-request comment. Its first
 * line is the verdict with experiment and run id; an invisible marker lets the job find and
 * update its own comment instead of adding a new one.
 *
 * @module
 */

import type { NamedChart } from "../charts/run_charts.ts";
import { escapeHtml, verdictLabel } from "./_format.ts";
import {
  type Cell,
  comparisonsTable,
  detailTable,
  diagnosticsTable,
  divergenceValues,
  erroredPhases,
  failingComparisons,
  headline,
  noiseTable,
  phasesTable,
  planTable,
  stateTable,
  type Table,
  unjudgedComparisons,
  unjudgedTitle,
} from "./_tables.ts";
import type { LoadedRun } from "./load_run.ts";
import { rootCauseCard } from "./_card.ts";
import type { GoldenSummary, Verdict } from "../types/summary.ts";

/** The invisible marker a CI job searches for: `<!-- parity-report:<experiment> -->`. */
export function reportMarker(experiment: string): string {
  // `--` may not appear inside an HTML comment.
  return `<!-- parity-report:${experiment.replace(/--+/g, "-")} -->`;
}

/** First line of the report, e.g. `## ❌ FAIL — quickstart · 20261129T101500Z-ab12cd`. */
export function verdictLine(
  experiment: string,
  runId: string,
  verdict: Verdict | "N/A",
): string {
  return `## ${verdictLabel(verdict)} — ${mdText(experiment)} · ${mdText(runId)}`;
}

/** Escapes text for a Markdown table cell or heading (pipes, HTML, line breaks). */
export function mdText(text: string): string {
  return text
    .replace(/\\/g, "\\\\")
    .replace(/\|/g, "\\|")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/[*_`[\]]/g, (ch) => `\\${ch}`)
    .replace(/\r?\n/g, "<br>");
}

function mdCell(cell: Cell): string {
  const link = (text: string, href: string) => `[${mdText(text)}](${encodeURI(href)})`;
  let out = cell.href ? link(cell.text, cell.href) : mdText(cell.text);
  for (const more of cell.more ?? []) out += ` · ${link(more.text, more.href)}`;
  return cell.strong ? `**${out}**` : out;
}

/** Renders a table (or its `empty` sentence) as GitHub-flavoured Markdown. */
export function mdTable(table: Table): string {
  if (table.rows.length === 0) return `_${table.empty}_`;
  const head = `| ${table.headers.map(mdText).join(" | ")} |`;
  const rule = `|${table.numeric.map((n) => (n ? " ---: " : " --- ")).join("|")}|`;
  const body = table.rows.map((row) => `| ${row.map(mdCell).join(" | ")} |`);
  return [head, rule, ...body].join("\n");
}

/** A fenced code block whose fence is longer than any backtick run in `text`. */
export function codeBlock(text: string, info = "text"): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = "`".repeat(longest + 1);
  return `${fence}${info}\n${text}\n${fence}`;
}

/** Charts referenced by the report: name, caption and the PNG path relative to the run folder. */
export interface ChartLink {
  /** Chart file stem. */
  name: string;
  /** Caption. */
  caption: string;
  /** Relative PNG path, e.g. `charts/loss.png`. */
  png: string;
  /** Comparison the chart belongs to. */
  comparison?: string;
}

/** Chart links for the charts written under `charts/`. */
export function chartLinks(charts: NamedChart[]): ChartLink[] {
  return charts.map((ch) => ({
    name: ch.name,
    caption: ch.caption,
    png: `charts/${ch.name}.png`,
    comparison: ch.comparison,
  }));
}

/** One line on the golden comparison (its rows are `golden~baseline` in the table above). */
function goldenLine(g: GoldenSummary): string {
  const where = g.found ? `\`${mdText(g.file)}\`` : "none stored";
  return `**Golden: ${g.verdict}** · environment \`${
    mdText(g.environment_key)
  }\` · golden ${where}` +
    ` · ${mdText(g.reason)}`;
}

/**
 * Renders `report.md` for a loaded run.
 *
 * @param run The run.
 * @param charts Charts written under `<run>/charts/`.
 * @param existingFiles Run-relative paths that exist (log links are shown only for these).
 */
export function renderMarkdown(
  run: LoadedRun,
  charts: ChartLink[],
  existingFiles: Set<string>,
): string {
  const s = run.summary;
  const out: string[] = [];
  out.push(verdictLine(s.experiment, s.run_id, s.verdict));
  out.push(reportMarker(s.experiment));
  out.push("");
  // The root-cause card first: what happened and what to try, before any table.
  // Backticks would be escaped to literal marks; the card reads better without them.
  const plain = (text: string) => mdText(text.replace(/`/g, ""));
  for (const entry of rootCauseCard(s)) {
    out.push(`> **${mdText(entry.label)}** — ${plain(entry.title)}`);
    out.push(`> `, `> **Next:** ${plain(entry.next)}`);
    for (const line of entry.evidence) out.push(`> - ${mdText(line)}`);
    if (entry.logTail) {
      out.push("> ", ...codeBlock(entry.logTail).split("\n").map((l) => `> ${l}`));
    }
    out.push("");
  }
  out.push(mdText(headline(run)));
  out.push("");
  out.push(`### ${comparisonsTable(run).title}`, "", mdTable(comparisonsTable(run)), "");
  if (s.golden) out.push(goldenLine(s.golden), "");
  for (const cmp of failingComparisons(run)) {
    const d = divergenceValues(run, cmp);
    const summaryLine = d
      ? `${verdictLabel(cmp.verdict)} ${escapeHtml(cmp.name)}: first divergence at step ${d.step}`
      : `${verdictLabel(cmp.verdict)} ${escapeHtml(cmp.name)}: ${
        escapeHtml(cmp.reason ?? "no divergent step")
      }`;
    out.push("<details>", `<summary>${summaryLine}</summary>`, "");
    if (cmp.reason) out.push(mdText(cmp.reason), "");
    if (d) out.push(mdTable(detailTable(run, cmp)), "");
    const chart = charts.find((ch) => ch.comparison === cmp.name);
    if (chart) out.push(`![${mdText(chart.caption)}](${encodeURI(chart.png)})`, "");
    out.push("</details>", "");
  }
  const unjudged = unjudgedComparisons(run);
  if (unjudged.length > 0) {
    out.push("<details>", `<summary>${escapeHtml(unjudgedTitle(unjudged.length))}</summary>`, "");
    for (const cmp of unjudged) {
      out.push(`- ${mdText(cmp.name)}: ${mdText(cmp.reason ?? "no values to compare")}`);
    }
    out.push("", "</details>", "");
  }
  for (const table of [stateTable(run), planTable(run), noiseTable(run), diagnosticsTable(run)]) {
    out.push(`### ${table.title}`, "", mdTable(table), "");
  }
  const phases = phasesTable(run, existingFiles);
  out.push(`### ${phases.title}`, "", mdTable(phases), "");
  for (const phase of erroredPhases(run)) {
    const tail = run.logTail(phase.name);
    out.push(
      "<details>",
      `<summary>💥 ${escapeHtml(phase.name)} log tail (${phase.status}${
        phase.exit_code !== null ? `, exit ${phase.exit_code}` : ""
      })</summary>`,
      "",
    );
    out.push(codeBlock(tail === "" ? "(no log output)" : tail), "", "</details>", "");
  }
  if (charts.length > 0) {
    out.push("### Charts", "");
    for (const ch of charts) out.push(`![${mdText(ch.caption)}](${encodeURI(ch.png)})`, "");
  }
  out.push(
    `<sub>parity harness ${
      mdText(s.harness_version ?? "")
    } · interactive charts: report.html · machine-readable: summary.json, junit.xml</sub>`,
  );
  return out.join("\n") + "\n";
}
