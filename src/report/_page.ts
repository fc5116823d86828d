// The shell of every HTML page the harness writes (report.html, the history trend, the suite
// index): style, verdict badges that need no emoji font, and the offline chart embedding with a
// reset-zoom button per chart.

import type { Verdict } from "../types/mod.ts";
import type { ChartSpec } from "../charts/mod.ts";
import { browserBundles } from "./_bundles.ts";
import { escapeHtml } from "./_format.ts";

/** Page style: readable tables, verdict badges, charts that scroll when wider than the page. */
const PAGE_CSS = `
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:24px auto;max-width:1200px;padding:0 16px;color:#1f2328}
h1{font-size:1.6em;margin-bottom:4px}h2{font-size:1.25em;margin-top:28px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}tr.strong td{font-weight:bold;background:#fff5f5}
.chart{margin:12px 0;overflow-x:auto}.headline{color:#57606a}.card{border-left:4px solid #cf222e;background:#fff8f8;padding:4px 12px;margin:8px 0}.empty{color:#57606a;font-style:italic}
pre{background:#f6f8fa;padding:8px;overflow-x:auto;font-size:12px}details{margin:8px 0}summary{cursor:pointer}
.v{display:inline-block;min-width:3.6em;text-align:center;padding:0 6px;border-radius:3px;color:#fff;font-weight:600;font-size:12px;line-height:18px}
.v-PASS{background:#1a7f37}.v-FAIL{background:#cf222e}.v-ERROR{background:#8250df}.v-ABSTAIN{background:#9a6700}.v-NA{background:#6e7781}
.toc{font-size:13px;color:#57606a}.toc a{margin-right:12px}.reset{font-size:12px;margin:2px 0}
.new{display:inline-block;padding:0 4px;border-radius:3px;background:#ffebe9;color:#cf222e;font-weight:600;font-size:12px}
`;

/**
 * A verdict (or phase status) as a coloured badge with its word, so the page reads the same
 * without an emoji font.
 */
export function badge(tone: Verdict | "N/A", label: string = tone): string {
  const cls = tone === "N/A" ? "NA" : tone;
  return `<span class="v v-${cls}" data-verdict="${escapeHtml(tone)}">${escapeHtml(label)}</span>`;
}

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

/** A chart placeholder with its spec inlined and a reset-zoom button. */
export function chartBlock(index: number, name: string, spec: ChartSpec): string {
  return `<div class="chart" id="chart-${index}" data-name="${escapeHtml(name)}" ` +
    `data-spec="spec-${index}"></div>` +
    `<button type="button" class="reset" data-reset="chart-${index}">reset zoom</button>` +
    `<script type="application/json" id="spec-${index}">${scriptJson(spec)}</script>`;
}

/**
 * The browser-side script: embeds every chart, records how many rendered, and re-embeds a chart
 * when its reset button is pressed (zoom is x-only; double-click also resets).
 */
const EMBED_SCRIPT = `
(async () => {
  const nodes = document.querySelectorAll("div.chart[data-spec]");
  const embed = (node) => vegaEmbed(node, JSON.parse(document.getElementById(node.dataset.spec).textContent), {
    renderer: "svg",
    actions: { export: true, source: false, compiled: false, editor: false },
  });
  let rendered = 0;
  for (const node of nodes) {
    try {
      await embed(node);
      rendered++;
    } catch (error) {
      console.error("chart " + node.id + " failed: " + error);
    }
  }
  for (const button of document.querySelectorAll("button[data-reset]")) {
    button.addEventListener("click", () => embed(document.getElementById(button.dataset.reset)));
  }
  document.body.dataset.chartsRendered = String(rendered);
  document.body.dataset.chartsTotal = String(nodes.length);
})();
`;

/** A whole self-contained page; the vega bundles are inlined only when it has charts. */
export async function htmlPage(title: string, body: string[], charts: boolean): Promise<string> {
  const scripts = charts
    ? (await browserBundles()).map((b) =>
      `<script>/* ${b.name} */\n${scriptText(b.code)}\n</script>`
    )
      .join("\n")
    : "";
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${PAGE_CSS}</style>
${scripts}
</head>
<body>
${body.join("\n")}
${charts ? `<script>${scriptText(EMBED_SCRIPT)}</script>` : ""}
</body>
</html>
`;
}
