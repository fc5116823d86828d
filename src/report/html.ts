/**
 * `report.html`: one self-contained file that opens offline. The vega, vega-lite and vega-embed
 * browser bundles are inlined from node_modules, every chart spec is inlined with its data, and
 * the tables are the same as in `report.md`. Reading order: verdict, root-cause card, table of
 * contents, state checks, comparisons, where each broken phase diverged, charts, then the rest.
 * Verdicts are coloured badges with their word, so nothing depends on an emoji font.
 *
 * @module
 */

import { billSentences } from "./_bill.ts";
import type { NamedChart } from "../charts/mod.ts";
import { culprits } from "../parity/mod.ts";
import { escapeHtml } from "./_format.ts";
import { badge, chartBlock, htmlPage } from "./_page.ts";
import {
  type Cell,
  comparisonsTable,
  culpritComparison,
  detailTable,
  diagnosticsTable,
  divergenceValues,
  erroredPhases,
  headline,
  noiseTable,
  phasesTable,
  planTable,
  sensitivityTable,
  stateTable,
  type Table,
  unjudgedComparisons,
  unjudgedTitle,
} from "./_tables.ts";
import type { LoadedRun } from "./load_run.ts";
import { rootCauseCard } from "./_card.ts";

function htmlCell(cell: Cell, numeric: boolean): string {
  const link = (text: string, href: string) =>
    `<a href="${escapeHtml(encodeURI(href))}">${escapeHtml(text)}</a>`;
  let inner = cell.badge
    ? badge(cell.badge.tone, cell.badge.label) + escapeHtml(cell.badge.suffix)
    : cell.href
    ? link(cell.text, cell.href)
    : escapeHtml(cell.text);
  for (const more of cell.more ?? []) inner += ` · ${link(more.text, more.href)}`;
  return `<td${numeric ? ' class="num"' : ""}>${inner}</td>`;
}

/** Renders a table (or its `empty` sentence) as HTML. */
export function htmlTable(table: Table): string {
  if (table.rows.length === 0) return `<p class="empty">${escapeHtml(table.empty)}</p>`;
  const head = `<tr>${table.headers.map((h) => `<th>${escapeHtml(h)}</th>`).join("")}</tr>`;
  const body = table.rows.map((row) => {
    const strong = row.some((cell) => cell.strong);
    return `<tr${strong ? ' class="strong"' : ""}>${
      row.map((cell, i) => htmlCell(cell, table.numeric[i])).join("")
    }</tr>`;
  });
  return `<table id="table-${escapeHtml(table.id)}"><thead>${head}</thead><tbody>${
    body.join("\n")
  }</tbody></table>`;
}

/** A section: `<h2 id>` plus content, listed in the table of contents. */
interface Section {
  id: string;
  title: string;
  html: string;
}

function cardHtml(run: LoadedRun): string {
  return rootCauseCard(run.summary).map((entry) =>
    `<div class="card" data-code="${escapeHtml(entry.code)}"><p>${badge(entry.verdict)} <strong>${
      escapeHtml(entry.code)
    }</strong> — ${escapeHtml(entry.title)}</p>` +
    `<p><strong>Next:</strong> ${escapeHtml(entry.next)}</p>` +
    (entry.evidence.length > 0
      ? `<ul>${entry.evidence.map((l) => `<li>${escapeHtml(l)}</li>`).join("")}</ul>`
      : "") +
    (entry.logTail ? `<pre>${escapeHtml(entry.logTail)}</pre>` : "") + "</div>"
  ).join("\n");
}

function divergedHtml(run: LoadedRun): string {
  const s = run.summary;
  const parts: string[] = [];
  for (const culprit of culprits(s)) {
    const cmp = culpritComparison(culprit, s.comparisons);
    const where = culprit.step === null
      ? "no divergent step"
      : `first diverges at step ${culprit.step}`;
    parts.push(
      `<h3 id="diverged-${escapeHtml(culprit.phase)}">${escapeHtml(culprit.phase)}: ${where}</h3>`,
    );
    if (cmp?.reason) parts.push(`<p>${escapeHtml(cmp.reason)}</p>`);
    if (cmp && divergenceValues(run, cmp)) parts.push(htmlTable(detailTable(run, cmp)));
    const others = culprit.comparisons.filter((n) => n !== cmp?.name);
    if (others.length > 0) parts.push(`<p>Also blamed by: ${escapeHtml(others.join(", "))}.</p>`);
  }
  const unjudged = unjudgedComparisons(run);
  if (unjudged.length > 0) {
    parts.push(
      `<details><summary>${badge("ERROR")} ${
        escapeHtml(unjudgedTitle(unjudged.length))
      }</summary><ul>`,
    );
    for (const cmp of unjudged) {
      parts.push(`<li>${escapeHtml(`${cmp.name}: ${cmp.reason ?? "no values to compare"}`)}</li>`);
    }
    parts.push("</ul></details>");
  }
  return parts.join("\n");
}

function chartsHtml(charts: NamedChart[]): string {
  const block = (ch: NamedChart, i: number) =>
    `<p>${escapeHtml(ch.caption)}</p>` + chartBlock(i, ch.name, ch.spec);
  const shown = charts.map((ch, i) => ({ ch, i }));
  const informative = shown.filter(({ ch }) => ch.informative);
  const flat = shown.filter(({ ch }) => !ch.informative);
  return informative.map(({ ch, i }) => block(ch, i)).join("\n") +
    (flat.length > 0
      ? `\n<details><summary>${flat.length} chart${
        flat.length === 1 ? "" : "s"
      } of identical pairs (flat zero)</summary>\n${
        flat.map(({ ch, i }) => block(ch, i)).join("\n")
      }\n</details>`
      : "");
}

/**
 * Renders `report.html` for a loaded run with its chart specs inlined.
 */
export async function renderHtml(
  run: LoadedRun,
  charts: NamedChart[],
  existingFiles: Set<string>,
): Promise<string> {
  const s = run.summary;
  const title = `${s.verdict} — ${s.experiment} · ${s.run_id}`;
  const sections: Section[] = [];
  const table = (t: Table): Section => ({ id: t.id, title: t.title, html: htmlTable(t) });
  sections.push(table(stateTable(run)));
  sections.push(table(comparisonsTable(run)));
  const diverged = divergedHtml(run);
  if (diverged !== "") {
    sections.push({ id: "diverged", title: "Where it diverged", html: diverged });
  }
  if (charts.length > 0) sections.push({ id: "charts", title: "Charts", html: chartsHtml(charts) });
  for (const t of [sensitivityTable(run), planTable(run), noiseTable(run), diagnosticsTable(run)]) {
    if (t.id !== "sensitivity" || t.rows.length > 0) sections.push(table(t));
  }
  const bill = billSentences(run.summary);
  if (bill.length > 0) {
    const html = bill.map((line) => `<p>${escapeHtml(line)}</p>`).join("\n");
    sections.push({ id: "cost", title: "Cost", html });
  }
  sections.push(table(phasesTable(run, existingFiles)));
  const logs = erroredPhases(run).map((phase) => {
    const tail = run.logTail(phase.name);
    return `<details open><summary>${badge("ERROR", phase.status)} ${
      escapeHtml(`${phase.name} log tail`)
    }</summary><pre>${escapeHtml(tail === "" ? "(no log output)" : tail)}</pre></details>`;
  });
  if (logs.length > 0) sections.push({ id: "logs", title: "Log tails", html: logs.join("\n") });
  const body = [
    `<h1 id="verdict" data-verdict="${escapeHtml(s.verdict)}">${badge(s.verdict)} ${
      escapeHtml(`${s.experiment} · ${s.run_id}`)
    }</h1>`,
    cardHtml(run),
    `<p class="headline">${escapeHtml(headline(run))}</p>`,
    `<nav class="toc">${
      sections.map((x) => `<a href="#${escapeHtml(x.id)}">${escapeHtml(x.title)}</a>`).join("")
    }</nav>`,
    ...sections.map((x) => `<h2 id="${escapeHtml(x.id)}">${escapeHtml(x.title)}</h2>\n${x.html}`),
  ];
  return await htmlPage(title, body, charts.length > 0);
}
