/**
 * `report.html`: one self-contained file that opens offline. The vega, vega-lite and vega-embed
 * browser bundles are inlined from node_modules, every chart spec is inlined with its data, and
 * the tables are the same as in `report.md`.
 *
 * @module
 */

import type { NamedChart } from "../charts/run_charts.ts";
import { escapeHtml, verdictLabel } from "./_format.ts";
import { browserBundles } from "./_bundles.ts";
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

/** Page style: readable tables, verdict colours, charts that scroll when wider than the page. */
export const REPORT_CSS = `
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:24px auto;max-width:1200px;padding:0 16px;color:#1f2328}
h1{font-size:1.6em;margin-bottom:4px}h2{font-size:1.25em;margin-top:28px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}tr.strong td{font-weight:bold;background:#fff5f5}
.chart{margin:12px 0;overflow-x:auto}.headline{color:#57606a}.card{border-left:4px solid #cf222e;background:#fff8f8;padding:4px 12px;margin:8px 0}.empty{color:#57606a;font-style:italic}
pre{background:#f6f8fa;padding:8px;overflow-x:auto;font-size:12px}details{margin:8px 0}summary{cursor:pointer}
`;

/** Escapes a value as JSON safe to place inside a `<script>` element. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, "\\u003c")
    .replace(/>/g, "\\u003e")
    .replace(/&/g, "\\u0026")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");
}

/**
 * Makes script text safe inside an inline `<script>` element: only `</script` can end it early
 * (`<\/` means the same inside JS strings and regular expressions).
 */
export function scriptText(code: string): string {
  return code.replace(/<\/(script)/gi, "<\\/$1");
}

function htmlCell(cell: Cell, numeric: boolean): string {
  const link = (text: string, href: string) =>
    `<a href="${escapeHtml(encodeURI(href))}">${escapeHtml(text)}</a>`;
  let inner = cell.href ? link(cell.text, cell.href) : escapeHtml(cell.text);
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

/** The browser-side script: embeds every chart and records how many rendered. */
const EMBED_SCRIPT = `
(async () => {
  const nodes = document.querySelectorAll("div.chart[data-spec]");
  let rendered = 0;
  for (const node of nodes) {
    const spec = JSON.parse(document.getElementById(node.dataset.spec).textContent);
    try {
      await vegaEmbed(node, spec, {
        renderer: "svg",
        actions: { export: true, source: false, compiled: false, editor: false },
      });
      rendered++;
    } catch (error) {
      console.error("chart " + node.id + " failed: " + error);
    }
  }
  document.body.dataset.chartsRendered = String(rendered);
  document.body.dataset.chartsTotal = String(nodes.length);
})();
`;

/**
 * Renders `report.html` for a loaded run with its chart specs inlined.
 */
export async function renderHtml(
  run: LoadedRun,
  charts: NamedChart[],
  existingFiles: Set<string>,
): Promise<string> {
  const s = run.summary;
  const bundles = await browserBundles();
  const title = `${verdictLabel(s.verdict)} — ${s.experiment} · ${s.run_id}`;
  const parts: string[] = [];
  parts.push(`<h1 id="verdict" data-verdict="${escapeHtml(s.verdict)}">${escapeHtml(title)}</h1>`);
  for (const entry of rootCauseCard(s)) {
    parts.push(
      `<div class="card" data-code="${escapeHtml(entry.code)}"><p><strong>${
        escapeHtml(entry.label)
      }</strong> — ${escapeHtml(entry.title)}</p><p><strong>Next:</strong> ${
        escapeHtml(entry.next)
      }</p>` +
        (entry.evidence.length > 0
          ? `<ul>${entry.evidence.map((l) => `<li>${escapeHtml(l)}</li>`).join("")}</ul>`
          : "") +
        (entry.logTail ? `<pre>${escapeHtml(entry.logTail)}</pre>` : "") + "</div>",
    );
  }
  parts.push(`<p class="headline">${escapeHtml(headline(run))}</p>`);
  const comparisons = comparisonsTable(run);
  parts.push(`<h2>${escapeHtml(comparisons.title)}</h2>`, htmlTable(comparisons));
  for (const cmp of failingComparisons(run)) {
    const d = divergenceValues(run, cmp);
    parts.push("<details>");
    parts.push(
      `<summary>${
        escapeHtml(
          `${verdictLabel(cmp.verdict)} ${cmp.name}: ` +
            (d ? `first divergence at step ${d.step}` : cmp.reason ?? "no divergent step"),
        )
      }</summary>`,
    );
    if (cmp.reason) parts.push(`<p>${escapeHtml(cmp.reason)}</p>`);
    if (d) parts.push(htmlTable(detailTable(run, cmp)));
    parts.push("</details>");
  }
  const unjudged = unjudgedComparisons(run);
  if (unjudged.length > 0) {
    parts.push(`<details><summary>${escapeHtml(unjudgedTitle(unjudged.length))}</summary><ul>`);
    for (const cmp of unjudged) {
      parts.push(`<li>${escapeHtml(`${cmp.name}: ${cmp.reason ?? "no values to compare"}`)}</li>`);
    }
    parts.push("</ul></details>");
  }
  if (charts.length > 0) {
    parts.push("<h2>Charts</h2>");
    charts.forEach((ch, i) => {
      parts.push(`<p>${escapeHtml(ch.caption)}</p>`);
      parts.push(
        `<div class="chart" id="chart-${i}" data-name="${
          escapeHtml(ch.name)
        }" data-spec="spec-${i}"></div>`,
      );
      parts.push(`<script type="application/json" id="spec-${i}">${scriptJson(ch.spec)}</script>`);
    });
  }
  for (
    const table of [
      stateTable(run),
      planTable(run),
      noiseTable(run),
      diagnosticsTable(run),
      phasesTable(run, existingFiles),
    ]
  ) {
    parts.push(`<h2>${escapeHtml(table.title)}</h2>`, htmlTable(table));
  }
  for (const phase of erroredPhases(run)) {
    const tail = run.logTail(phase.name);
    parts.push(
      `<details><summary>${escapeHtml(`💥 ${phase.name} log tail (${phase.status})`)}</summary>` +
        `<pre>${escapeHtml(tail === "" ? "(no log output)" : tail)}</pre></details>`,
    );
  }
  const scripts = bundles.map((b) => `<script>/* ${b.name} */\n${scriptText(b.code)}\n</script>`)
    .join("\n");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${REPORT_CSS}</style>
${scripts}
</head>
<body>
${parts.join("\n")}
<script>${scriptText(EMBED_SCRIPT)}</script>
</body>
</html>
`;
}
