/**
 * The nightly suite index: after several experiment files run, `<results>/suite-<time>/index.md`
 * and `index.html` list one row per experiment, worst verdict first, with its root cause, what
 * changed since the experiment's last run (`NEW` when it passed last time) and links to its
 * reports and to the history trend. index.md stays within a pull-request comment's limit.
 *
 * @module
 */

import { relative } from "node:path";
import { type RunSummary, VERDICT_RANK } from "../types/mod.ts";
import { culprits } from "../parity/mod.ts";
import { duration } from "../format/mod.ts";
import { escapeHtml, verdictLabel } from "./_format.ts";
import { renderJunit } from "./junit.ts";
import { badge, htmlPage } from "./_page.ts";
import { type HistoryRow, previousRun, readHistory } from "./history.ts";
import { renderHistoryView } from "./history_page.ts";
import { COMMENT_BUDGET, fitComment, mdText, runLinkResolver } from "./markdown.ts";
import { writeTextAtomic } from "../process/mod.ts";

/**
 * The invisible marker of a suite's index.md, which a CI job searches for to update its one pull
 * request comment in place (`.github/workflows/parity-nightly.yml`).
 */
export const SUITE_MARKER = "<!-- parity-suite-index -->";

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
function sortSuite(entries: SuiteEntry[]): SuiteEntry[] {
  return [...entries].sort((a, b) =>
    VERDICT_RANK[b.summary.verdict] - VERDICT_RANK[a.summary.verdict] ||
    a.experiment.localeCompare(b.experiment)
  );
}

/** How an experiment's verdict compares with its last run. */
export interface SuiteChange {
  /** Text for the "vs last run" column (`new FAIL`, `fixed`, `still FAIL`, …). */
  text: string;
  /** True when it passed last time and does not now: the marker reviewers look for. */
  isNew: boolean;
}

/**
 * The change of one experiment since its previous run in `history` (rows of this run and later
 * ones are not "previous").
 */
export function suiteChange(summary: RunSummary, history: HistoryRow[]): SuiteChange {
  const previous = previousRun(history, summary);
  if (previous === null) return { text: "first run", isNew: summary.verdict !== "PASS" };
  const now = summary.verdict;
  if (previous.verdict === now) {
    if (now === "PASS") return { text: "unchanged", isNew: false };
    const cause = summary.findings?.[0]?.code ?? "";
    const changed = cause !== previous.cause && previous.cause !== "" ? " (cause changed)" : "";
    return { text: `still ${now}${changed}`, isNew: false };
  }
  if (now === "PASS") return { text: `fixed (was ${previous.verdict})`, isNew: false };
  return { text: `new ${now} (was ${previous.verdict})`, isNew: previous.verdict === "PASS" };
}

interface Row {
  verdict: RunSummary["verdict"];
  experiment: string;
  change: SuiteChange;
  cause: string;
  divergence: string;
  comparisons: string;
  wall: string;
  links: { text: string; href: string }[];
}

function rowsOf(
  suiteDir: string,
  entries: SuiteEntry[],
  history: HistoryRow[],
  imageBaseUrl?: string,
): Row[] {
  return sortSuite(entries).map((e) => {
    const s = e.summary;
    const bad = s.comparisons.filter((c) => c.verdict !== "PASS").length;
    const broken = culprits(s);
    const rel = relative(suiteDir, e.runDir).split("\\").join("/");
    const resolve = runLinkResolver(e.runDir, imageBaseUrl);
    const href = (file: string) => (imageBaseUrl ? resolve(file) : encodeURI(`${rel}/${file}`));
    return {
      verdict: s.verdict,
      experiment: e.experiment,
      change: suiteChange(s, history),
      cause: s.findings?.[0]?.code ?? "—",
      divergence: broken.length > 0
        ? broken.map((c) => `${c.phase} @ ${c.step ?? "?"}`).join(", ")
        : "—",
      comparisons: `${s.comparisons.length - bad}/${s.comparisons.length} pass`,
      wall: duration(s.wall_s),
      links: ["report.md", "report.html", "junit.xml"].map((f) => ({ text: f, href: href(f) })),
    };
  });
}

function worst(entries: SuiteEntry[]): RunSummary["verdict"] {
  return sortSuite(entries)[0]?.summary.verdict ?? "PASS";
}

/** What the index pages link to besides the runs. */
interface SuiteLinks {
  /** The history trend page relative to the suite folder, when rendered. */
  trend?: string;
}

/** The suite index as Markdown, within {@link COMMENT_BUDGET}: PASS rows fold into one line. */
function suiteMarkdown(
  rows: Row[],
  entries: SuiteEntry[],
  time: string,
  links: SuiteLinks = {},
): string {
  const failing = rows.filter((r) => r.verdict !== "PASS");
  const passing = rows.filter((r) => r.verdict === "PASS");
  const fresh = failing.filter((r) => r.change.isNew).length;
  const line = (r: Row) =>
    `| ${verdictLabel(r.verdict)} | ${mdText(r.experiment)} | ${
      r.change.isNew ? `**🆕 ${mdText(r.change.text)}**` : mdText(r.change.text)
    } | ${mdText(r.cause)} | ${mdText(r.divergence)} | ${r.comparisons} | ${r.wall} | ${
      r.links.map((l) => `[${l.text}](${l.href})`).join(" · ")
    } |`;
  const head = [
    `## ${verdictLabel(worst(entries))} — parity suite · ${time}`,
    SUITE_MARKER,
    "",
    `${entries.length} experiment${entries.length === 1 ? "" : "s"}: ${failing.length} not PASS` +
    (fresh > 0 ? `, ${fresh} new since the last run` : "") +
    (links.trend ? ` · [history trend](${encodeURI(links.trend)})` : ""),
  ].join("\n");
  const table = failing.length === 0 ? "" : [
    "| verdict | experiment | vs last run | cause | diverged | comparisons | wall time | reports |",
    "| --- | --- | --- | --- | --- | ---: | ---: | --- |",
    ...failing.map(line),
  ].join("\n");
  const pass = passing.length === 0
    ? ""
    : `<details><summary>${verdictLabel("PASS")}: ${passing.length} experiment${
      passing.length === 1 ? "" : "s"
    }</summary>\n\n${
      passing.map((r) => `[${mdText(r.experiment)}](${r.links[0].href})`).join(", ")
    }\n\n</details>`;
  return fitComment([
    { text: head },
    { text: table },
    { text: pass, brief: `${verdictLabel("PASS")}: ${passing.length} experiments (index.html).` },
  ], COMMENT_BUDGET);
}

/** The suite index as a self-contained HTML page (no charts, so no bundles). */
async function suiteHtml(
  rows: Row[],
  entries: SuiteEntry[],
  time: string,
  links: SuiteLinks = {},
): Promise<string> {
  const title = `${worst(entries)} — parity suite · ${time}`;
  const body = rows.map((r) =>
    `<tr data-verdict="${r.verdict}"><td>${badge(r.verdict)}</td><td>${
      escapeHtml(r.experiment)
    }</td>` +
    `<td>${r.change.isNew ? '<span class="new">NEW</span> ' : ""}${
      escapeHtml(r.change.text)
    }</td><td>${escapeHtml(r.cause)}</td><td>${escapeHtml(r.divergence)}</td>` +
    `<td>${escapeHtml(r.comparisons)}</td><td class="num">${escapeHtml(r.wall)}</td><td>${
      r.links.map((l) => `<a href="${escapeHtml(l.href)}">${escapeHtml(l.text)}</a>`).join(" · ")
    }</td></tr>`
  ).join("\n");
  return await htmlPage(title, [
    `<h1>${badge(worst(entries))} ${escapeHtml(`parity suite · ${time}`)}</h1>`,
    links.trend
      ? `<p class="toc"><a href="${escapeHtml(encodeURI(links.trend))}">history trend</a></p>`
      : "",
    `<table id="suite"><thead><tr><th>verdict</th><th>experiment</th><th>vs last run</th>` +
    `<th>cause</th><th>diverged</th><th>comparisons</th><th>wall time</th><th>reports</th>` +
    `</tr></thead>\n<tbody>\n${body}\n</tbody></table>`,
  ], false);
}

/** Options of {@link writeSuiteIndex}. */
export interface SuiteOptions {
  /** Suite time (defaults to now); a same-second suite gets a `-2`, `-3` suffix. */
  now?: Date;
  /** The results folder's published URL: report links in index.md become absolute. */
  imageBaseUrl?: string;
}

/**
 * Writes `<resultsDir>/suite-<time>/index.md`, `index.html` and `junit.xml` (one testsuite per
 * experiment), and refreshes the history trend (`<resultsDir>/history/index.html`) they link to.
 *
 * @param resultsDir The results folder.
 * @param entries One entry per experiment run.
 * @param options Suite time and image base URL.
 * @returns The path of `index.md` (its folder also holds `index.html` and `junit.xml`).
 */
export async function writeSuiteIndex(
  resultsDir: string,
  entries: SuiteEntry[],
  options: SuiteOptions = {},
): Promise<string> {
  const time = compactUtc(options.now ?? new Date());
  const root = resultsDir.replace(/\/+$/, "");
  await Deno.mkdir(resultsDir, { recursive: true });
  let dir = `${root}/suite-${time}`;
  for (let k = 2;; k++) {
    try {
      await Deno.mkdir(dir);
      break;
    } catch (error) {
      if (!(error instanceof Deno.errors.AlreadyExists)) throw error;
      dir = `${root}/suite-${time}-${k}`;
    }
  }
  const history = await readHistory(root);
  const trend = await renderHistoryView(root, { rows: history });
  const links: SuiteLinks = trend ? { trend: relative(dir, trend.html) } : {};
  const rows = rowsOf(dir, entries, history, options.imageBaseUrl);
  await writeTextAtomic(`${dir}/index.md`, suiteMarkdown(rows, entries, time, links));
  await writeTextAtomic(`${dir}/index.html`, await suiteHtml(rows, entries, time, links));
  // One JUnit file for the whole suite, so a CI dashboard reads every experiment at once.
  await writeTextAtomic(
    `${dir}/junit.xml`,
    renderJunit(entries.map((e) => ({ summary: e.summary })), `parity suite ${time}`),
  );
  return `${dir}/index.md`;
}
