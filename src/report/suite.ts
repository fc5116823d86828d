/**
 * The nightly suite index: after several experiment files run, `<results>/suite-<time>/index.md`
 * and `index.html` list one row per experiment, worst verdict first, linking each run's reports.
 *
 * @module
 */

import { relative } from "node:path";
import { type RunSummary, VERDICT_RANK } from "../types/summary.ts";
import { seconds } from "../format/numbers.ts";
import { escapeHtml, verdictLabel } from "./_format.ts";
import { renderJunit } from "./junit.ts";
import { REPORT_CSS } from "./html.ts";
import { mdText } from "./markdown.ts";

/** One experiment of a suite. */
export interface SuiteEntry {
  /** Experiment name. */
  experiment: string;
  /** Its run folder. */
  runDir: string;
  /** Its summary. */
  summary: RunSummary;
}

/** `20261129T101500Z` for a date. */
export function compactUtc(date: Date): string {
  return date.toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
}

/** Entries ordered worst verdict first (FAIL, ERROR, ABSTAIN, PASS), then by experiment name. */
export function sortSuite(entries: SuiteEntry[]): SuiteEntry[] {
  return [...entries].sort((a, b) =>
    VERDICT_RANK[b.summary.verdict] - VERDICT_RANK[a.summary.verdict] ||
    a.experiment.localeCompare(b.experiment)
  );
}

interface Row {
  verdict: RunSummary["verdict"];
  experiment: string;
  runId: string;
  comparisons: string;
  divergence: string;
  wall: string;
  links: { text: string; href: string }[];
}

function rowsOf(suiteDir: string, entries: SuiteEntry[]): Row[] {
  return sortSuite(entries).map((e) => {
    const s = e.summary;
    const bad = s.comparisons.filter((c) => c.verdict !== "PASS").length;
    const first = s.comparisons.find((c) => c.first_divergent_step !== null);
    const rel = relative(suiteDir, e.runDir).split("\\").join("/");
    return {
      verdict: s.verdict,
      experiment: e.experiment,
      runId: s.run_id,
      comparisons: `${s.comparisons.length - bad}/${s.comparisons.length} pass`,
      divergence: first ? `${first.name} @ ${first.first_divergent_step}` : "—",
      wall: seconds(s.wall_s),
      links: [
        { text: "report.md", href: `${rel}/report.md` },
        { text: "report.html", href: `${rel}/report.html` },
        { text: "junit.xml", href: `${rel}/junit.xml` },
      ],
    };
  });
}

function worst(entries: SuiteEntry[]): RunSummary["verdict"] {
  return sortSuite(entries)[0]?.summary.verdict ?? "PASS";
}

/** The suite index as Markdown. */
export function suiteMarkdown(suiteDir: string, entries: SuiteEntry[], time: string): string {
  const rows = rowsOf(suiteDir, entries);
  const lines = [
    `## ${verdictLabel(worst(entries))} — parity suite · ${time}`,
    "",
    `${entries.length} experiment${entries.length === 1 ? "" : "s"}, worst verdict first.`,
    "",
    "| verdict | experiment | run | comparisons | first divergence | wall time | reports |",
    "| --- | --- | --- | --- | --- | ---: | --- |",
    ...rows.map((r) =>
      `| ${verdictLabel(r.verdict)} | ${mdText(r.experiment)} | ${
        mdText(r.runId)
      } | ${r.comparisons} | ` +
      `${mdText(r.divergence)} | ${r.wall} | ${
        r.links.map((l) => `[${l.text}](${encodeURI(l.href)})`).join(" · ")
      } |`
    ),
  ];
  return lines.join("\n") + "\n";
}

/** The suite index as a small self-contained HTML page. */
export function suiteHtml(suiteDir: string, entries: SuiteEntry[], time: string): string {
  const rows = rowsOf(suiteDir, entries);
  const title = `${verdictLabel(worst(entries))} — parity suite · ${time}`;
  const body = rows.map((r) =>
    `<tr data-verdict="${r.verdict}"><td>${escapeHtml(verdictLabel(r.verdict))}</td><td>${
      escapeHtml(r.experiment)
    }</td>` +
    `<td>${escapeHtml(r.runId)}</td><td>${escapeHtml(r.comparisons)}</td><td>${
      escapeHtml(r.divergence)
    }</td>` +
    `<td class="num">${escapeHtml(r.wall)}</td><td>${
      r.links.map((l) => `<a href="${escapeHtml(encodeURI(l.href))}">${escapeHtml(l.text)}</a>`)
        .join(" · ")
    }</td></tr>`
  ).join("\n");
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>${
    escapeHtml(title)
  }</title><style>${REPORT_CSS}</style></head>
<body><h1>${escapeHtml(title)}</h1>
<table id="suite"><thead><tr><th>verdict</th><th>experiment</th><th>run</th><th>comparisons</th><th>first divergence</th><th>wall time</th><th>reports</th></tr></thead>
<tbody>
${body}
</tbody></table></body></html>
`;
}

/**
 * Writes `<resultsDir>/suite-<time>/index.md`, `index.html` and `junit.xml` (one testsuite per
 * experiment).
 *
 * @param resultsDir The results folder.
 * @param entries One entry per experiment run.
 * @param now Suite time (defaults to now); a same-second suite gets a `-2`, `-3` suffix.
 * @returns The path of `index.md` (its folder also holds `index.html` and `junit.xml`).
 */
export async function writeSuiteIndex(
  resultsDir: string,
  entries: SuiteEntry[],
  now: Date = new Date(),
): Promise<string> {
  const time = compactUtc(now);
  await Deno.mkdir(resultsDir, { recursive: true });
  let dir = `${resultsDir.replace(/\/+$/, "")}/suite-${time}`;
  for (let k = 2;; k++) {
    try {
      await Deno.mkdir(dir);
      break;
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
      dir = `${resultsDir.replace(/\/+$/, "")}/suite-${time}-${k}`;
    }
  }
  await Deno.writeTextFile(`${dir}/index.md`, suiteMarkdown(dir, entries, time));
  await Deno.writeTextFile(`${dir}/index.html`, suiteHtml(dir, entries, time));
  // One JUnit file for the whole suite, so a CI dashboard reads every experiment at once.
  await Deno.writeTextFile(
    `${dir}/junit.xml`,
    renderJunit(entries.map((e) => ({ summary: e.summary })), `parity suite ${time}`),
  );
  return `${dir}/index.md`;
}
