/**
 * `report.md`: the GitHub-flavoured report a CI job posts as one pull-request comment. Its first
 * line is the verdict with experiment and run id; an invisible marker lets the job find and
 * update its own comment instead of adding a new one. Then, in order of what a reviewer needs:
 * the root-cause card, the state checks, only the comparisons that differ (PASS counted in one
 * line), one block per broken phase, and only the charts that carry information. With an image
 * base URL every link is absolute, so the images render in the comment. The whole comment stays
 * under GitHub's comment limit: lower sections give way first ({@link COMMENT_BUDGET}).
 *
 * @module
 */

import type { NamedChart } from "../charts/mod.ts";
import { escapeHtml, verdictLabel } from "./_format.ts";
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
import { billSentences } from "./_bill.ts";
import type { ComparisonSummary, GoldenSummary, StateCheckSummary, Verdict } from "../types/mod.ts";
import { type Culprit, culprits, stateCheckName } from "../parity/mod.ts";

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

/**
 * Escapes text for GitHub-flavoured Markdown as cmark-gfm (GitHub's renderer) reads it, in a
 * paragraph, heading or table cell: every inline marker (emphasis, code, links, `~`
 * strikethrough, table pipes), HTML and entities, a block marker at the start, and the three
 * extended autolinks (`www.`, `scheme://`, `name@host.tld`), which an empty HTML comment breaks
 * because a backslash cannot. Line breaks become `<br>`.
 */
export function mdText(text: string): string {
  return text
    .replace(/[\\`*_[\]~|]/g, (ch) => `\\${ch}`)
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/^([#+=-])(?=[\s#+=-]|$)/, "\\$1")
    .replace(/^(\d+)([.)])(?=\s|$)/, "$1\\$2")
    .replace(/(www)\./gi, "$1<!-- -->.")
    .replace(/:\/\//g, ":<!-- -->//")
    .replace(/@(?=[\w-]+\.)/g, "@<!-- -->")
    .replace(/\r?\n/g, "<br>");
}

/**
 * Inline code for GitHub-flavoured Markdown: a backtick fence longer than any run inside (content
 * is literal there, so nothing else is escaped), padded when the text starts or ends with a
 * backtick, and pipes escaped because GFM splits table cells on them even inside code.
 */
export function mdCode(text: string): string {
  const body = text.replace(/\r?\n/g, " ").replace(/\|/g, "\\|");
  const longest = Math.max(0, ...[...body.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = "`".repeat(longest + 1);
  const pad = /^`|`$/.test(body) ? " " : "";
  return `${fence}${pad}${body}${pad}${fence}`;
}

/** Turns a run-relative path into the link written in the report (absolute with a base URL). */
export type LinkResolver = (relative: string) => string;

const RELATIVE: LinkResolver = (rel) => encodeURI(rel);

function mdCell(cell: Cell, resolve: LinkResolver): string {
  const link = (text: string, href: string) => `[${mdText(text)}](${resolve(href)})`;
  let out = cell.href ? link(cell.text, cell.href) : mdText(cell.text);
  for (const more of cell.more ?? []) out += ` · ${link(more.text, more.href)}`;
  return cell.strong ? `**${out}**` : out;
}

/**
 * Renders a table (or its `empty` sentence) as GitHub-flavoured Markdown; cell links go through
 * `resolve` (relative by default).
 */
export function mdTable(table: Table, resolve: LinkResolver = RELATIVE): string {
  if (table.rows.length === 0) return `_${table.empty}_`;
  const head = `| ${table.headers.map(mdText).join(" | ")} |`;
  const rule = `|${table.numeric.map((n) => (n ? " ---: " : " --- ")).join("|")}|`;
  const body = table.rows.map((row) =>
    `| ${row.map((cell) => mdCell(cell, resolve)).join(" | ")} |`
  );
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
  /** False for a chart that shows nothing a reviewer needs (a flat-zero difference). */
  informative: boolean;
}

/** Chart links for the charts written under `charts/`. */
export function chartLinks(charts: NamedChart[]): ChartLink[] {
  return charts.map((ch) => ({
    name: ch.name,
    caption: ch.caption,
    png: `charts/${ch.name}.png`,
    comparison: ch.comparison,
    informative: ch.informative,
  }));
}

/** GitHub rejects a comment body over 65,536 characters. */
export const GITHUB_COMMENT_LIMIT = 65_536;

/** What report.md may use: the limit less room for a CI job's own header or footer. */
export const COMMENT_BUDGET = 60_000;

/** Rows of the "What differs" table kept when the comment must shrink. */
const BRIEF_ROWS = 30;

/** Options of {@link renderMarkdown}. */
export interface MarkdownOptions {
  /**
   * URL of the results folder as published by CI (`--image-base-url`): images and log links
   * become `<url>/<experiment folder>/<run id>/<path>`, which render in a PR comment.
   */
  imageBaseUrl?: string;
  /** Character budget (default {@link COMMENT_BUDGET}). */
  budget?: number;
}

/**
 * Why `url` cannot be an image base URL, or null when it can: it must be an absolute http(s) URL
 * without credentials (they would be written into every report), query or fragment (paths are
 * appended to it).
 */
export function imageBaseUrlProblem(url: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "--image-base-url: not an absolute URL (e.g. https://example.org/results/)";
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    return `--image-base-url: ${parsed.protocol} URLs do not render in a pull request; use https`;
  }
  if (parsed.username !== "" || parsed.password !== "") {
    return "--image-base-url: the URL carries credentials, which would be written into every report";
  }
  if (parsed.search !== "" || parsed.hash !== "") {
    return "--image-base-url: the URL has a query or fragment; paths are appended to it";
  }
  return null;
}

/**
 * The link resolver of a run: relative paths, or absolute URLs under `imageBaseUrl` (the results
 * folder's URL; the run sits at `<experiment folder>/<run id>` below it).
 */
export function runLinkResolver(runDir: string, imageBaseUrl?: string): LinkResolver {
  if (!imageBaseUrl) return RELATIVE;
  const parts = runDir.replace(/\/+$/, "").split("/");
  const runPath = parts.slice(-2).map(encodeURIComponent).join("/");
  const base = imageBaseUrl.replace(/\/+$/, "");
  return (rel) => `${base}/${runPath}/${encodeURI(rel)}`;
}

/** One line on the golden comparison (its rows are `golden~baseline` in the table above). */
function goldenLine(g: GoldenSummary): string {
  const where = g.found ? mdCode(g.file) : "none stored";
  return `**Golden: ${g.verdict}** · environment ${mdCode(g.environment_key)} · golden ${where}` +
    ` · ${mdText(g.reason)}`;
}

/** A section of the comment; `brief` replaces it when the comment would exceed its budget. */
interface Section {
  text: string;
  /** Shorter stand-in (a line pointing at report.html); omitted sections are dropped last first. */
  brief?: string;
}

/** Culprits whose comparisons diverge identically (same step, values and metric): one block. */
interface CulpritGroup {
  /** The culprit whose block is shown. */
  lead: Culprit;
  /** Its comparison. */
  cmp: ComparisonSummary | undefined;
  /** The other culprits with the same divergence, with their comparisons. */
  same: { culprit: Culprit; cmp: ComparisonSummary }[];
}

/** Groups culprits the way the root-cause card groups failures (`+5 identical`). */
function culpritGroups(run: LoadedRun, broken: Culprit[]): CulpritGroup[] {
  const groups = new Map<string, CulpritGroup>();
  broken.forEach((culprit, i) => {
    const cmp = culpritComparison(culprit, run.summary.comparisons);
    const d = cmp?.divergence;
    const key = cmp && d ? `${cmp.first_divergent_step}|${d.a}|${d.b}|${cmp.metric}` : `#${i}`;
    const group = groups.get(key);
    if (group && cmp) group.same.push({ culprit, cmp });
    else groups.set(key, { lead: culprit, cmp, same: [] });
  });
  return [...groups.values()];
}

function culpritBlock(
  run: LoadedRun,
  group: CulpritGroup,
  charts: ChartLink[],
  resolve: LinkResolver,
  open: boolean,
): string {
  const { lead: culprit, cmp, same } = group;
  const where = culprit.step === null
    ? "has no divergent step"
    : `first diverges at step ${culprit.step}`;
  const others = culprit.comparisons.filter((n) => n !== cmp?.name);
  const summaryLine = `${escapeHtml(culprit.phase)} ${where}` +
    (cmp ? ` (${escapeHtml(cmp.name)}, ${cmp.lane} lane)` : "") +
    (same.length > 0 ? ` +${same.length} identical` : "");
  const out = [open ? "<details open>" : "<details>", `<summary>${summaryLine}</summary>`, ""];
  if (cmp?.reason) out.push(mdText(cmp.reason), "");
  if (same.length > 0) {
    const list = same.map((s) =>
      `${mdText(s.culprit.phase)} (${mdText(s.cmp.name)}, ${s.cmp.lane} lane)`
    );
    out.push(`The same divergence (same step, same values) in: ${list.join(", ")}.`, "");
  }
  if (cmp && divergenceValues(run, cmp)) out.push(mdTable(detailTable(run, cmp), resolve), "");
  if (others.length > 0) {
    out.push(`Also blamed by: ${others.map(mdText).join(", ")}.`, "");
  }
  const chart = charts.find((ch) => ch.comparison === cmp?.name && ch.informative);
  if (chart) out.push(`![${mdText(chart.caption)}](${resolve(chart.png)})`, "");
  out.push("</details>");
  return out.join("\n");
}

function passLine(run: LoadedRun): string {
  const passed = run.summary.comparisons.filter((c) => c.verdict === "PASS");
  if (passed.length === 0) return "";
  const names = passed.map((c) => mdText(c.name)).join(", ");
  const label = `${verdictLabel("PASS")}: ${passed.length} comparison${
    passed.length === 1 ? "" : "s"
  }`;
  // A few names read inline; a long list folds away.
  return passed.length <= 4
    ? `${label} (${names}).`
    : `<details><summary>${label}</summary>\n\n${names}\n\n</details>`;
}

/**
 * `1 resume emitted no digests`, or `the split's save check and 2 resumes had no digests`: the
 * save check is the split's, never counted as a resume.
 */
function noDigestsNote(missing: readonly StateCheckSummary[]): string {
  const saves = missing.filter((c) => c.check === "save").length;
  const perturb = missing.some((c) => c.check === "perturb");
  const loads = missing.filter((c) => c.check === undefined).length;
  const resumes = loads > 0 ? `${loads} resume${loads === 1 ? "" : "s"}` : "";
  const checks = [
    saves > 0 ? "the save check (split vs the baseline at the save step)" : "",
    perturb ? "the fused save's perturbation check (before vs after the save)" : "",
  ].filter(Boolean);
  if (checks.length === 0) return `${resumes} emitted no digests`;
  return `${[resumes, ...checks].filter(Boolean).join(" and ")} had no digests`;
}

function stateSection(run: LoadedRun, resolve: LinkResolver): Section {
  const checks = run.summary.state_checks;
  const passed = checks.filter((c) => c.available && c.verdict === "PASS");
  const missing = checks.filter((c) => !c.available);
  const notes = [
    passed.length > 0
      ? `${verdictLabel("PASS")}: ${passed.map((c) => mdText(stateCheckName(c))).join(", ")} ` +
        "matched every compared component."
      : "",
    missing.length > 0 ? `_${noDigestsNote(missing)}._` : "",
  ].filter((line) => line !== "").join(" ");
  const bad = stateTable(run, "differing");
  if (bad.rows.length === 0) {
    return { text: checks.length === 0 ? "" : `**State checks:** ${notes}` };
  }
  return { text: `### ${bad.title}\n\n${mdTable(bad, resolve)}${notes ? `\n\n${notes}` : ""}` };
}

/** The sections of the comment in reading order. */
function sections(
  run: LoadedRun,
  charts: ChartLink[],
  existingFiles: Set<string>,
  resolve: LinkResolver,
): Section[] {
  const s = run.summary;
  const out: Section[] = [];
  out.push({
    text: `${verdictLine(s.experiment, s.run_id, s.verdict)}\n${reportMarker(s.experiment)}`,
  });
  // The root-cause card first: what happened and what to try, before any table.
  out.push(..._cardSections(run));
  const previous = run.previous
    ? ` · last run of this configuration ${mdText(run.previous.run_id)}: ${
      mdText(run.previous.verdict)
    }`
    : "";
  out.push({ text: mdText(headline(run)) + previous });
  out.push(stateSection(run, resolve));
  out.push(_differsSection(run, resolve));
  const worth = sensitivityTable(run);
  if (worth.rows.length > 0) {
    out.push({
      text: `### ${worth.title}\n\n${mdTable(worth, resolve)}`,
      brief: `_${worth.title}: see report.html._`,
    });
  }
  if (s.golden) out.push({ text: goldenLine(s.golden) });
  const broken = culprits(s);
  if (broken.length > 0) {
    const blocks = culpritGroups(run, broken).map((g, i) =>
      culpritBlock(run, g, charts, resolve, i === 0)
    );
    out.push({
      text: `### Where it diverged\n\n${blocks.join("\n\n")}`,
      brief: `### Where it diverged\n\n${
        broken.map((c) => `- ${mdText(c.phase)} at step ${c.step ?? "?"}`).join("\n")
      }`,
    });
  }
  const unjudged = unjudgedComparisons(run);
  if (unjudged.length > 0) out.push(_unjudgedSection(unjudged));
  out.push(...erroredPhases(run).map((phase) => _logTailSection(run, phase)));
  // Only charts that carry information; per-comparison charts sit in their culprit's block.
  const shown = charts.filter((ch) => ch.informative && ch.comparison === undefined);
  if (shown.length > 0) {
    out.push({
      text: ["### Charts", ...shown.map((ch) => `![${mdText(ch.caption)}](${resolve(ch.png)})`)]
        .join("\n\n"),
      brief: "_Charts: see report.html._",
    });
  }
  for (const table of [planTable(run), noiseTable(run), diagnosticsTable(run)]) {
    if (table.rows.length === 0) continue;
    out.push({
      text: `### ${table.title}\n\n${mdTable(table, resolve)}`,
      brief: `_${table.title}: see report.html._`,
    });
  }
  const bill = billSentences(s);
  if (bill.length > 0) {
    out.push({
      text: `### Cost\n\n${bill.map(mdText).join("\n\n")}`,
      brief: `_Cost: ${mdText(bill[0])}_`,
    });
  }
  out.push(_phasesSection(run, existingFiles, resolve), _footer(run, resolve));
  return out;
}

/** The root-cause card: one quoted block per cause, with what to try next. */
function _cardSections(run: LoadedRun): Section[] {
  // Backticks would be escaped to literal marks; the card reads better without them.
  const plain = (text: string) => mdText(text.replace(/`/g, ""));
  return rootCauseCard(run.summary).map((entry) => {
    const lines = [
      `> **${mdText(entry.label)}** — ${plain(entry.title)}`,
      "> ",
      `> **Next:** ${plain(entry.next)}`,
      ...entry.evidence.map((line) => `> - ${mdText(line)}`),
    ];
    if (entry.logTail) {
      lines.push(
        "> ",
        ...codeBlock(entry.logTail).split("\n").map((l) => `> ${l}`),
      );
    }
    return { text: lines.join("\n") };
  });
}

/** The comparisons that differ (the first rows in brief), then the ones that pass. */
function _differsSection(run: LoadedRun, resolve: LinkResolver): Section {
  const differs = comparisonsTable(run, "differing");
  const pass = passLine(run);
  const differsText = (shown: Table) =>
    `### ${differs.title}\n\n${mdTable(shown, resolve)}` +
    (shown.rows.length < differs.rows.length
      ? `\n\n_${differs.rows.length - shown.rows.length} more comparisons differ: see report.html._`
      : "") +
    (pass ? `\n\n${pass}` : "");
  return differs.rows.length === 0 ? { text: pass } : {
    text: differsText(differs),
    // The first rows are the ones a reviewer reads; the rest stay in report.html.
    brief: differsText({ ...differs, rows: differs.rows.slice(0, BRIEF_ROWS) }),
  };
}

/** The comparisons that could not be judged, folded. */
function _unjudgedSection(unjudged: ReturnType<typeof unjudgedComparisons>): Section {
  return {
    text: [
      "<details>",
      `<summary>${verdictLabel("ERROR")}: ${escapeHtml(unjudgedTitle(unjudged.length))}</summary>`,
      "",
      ...unjudged.map((cmp) =>
        `- ${mdText(cmp.name)}: ${mdText(cmp.reason ?? "no values to compare")}`
      ),
      "",
      "</details>",
    ].join("\n"),
  };
}

/** A failed phase's log tail, folded. */
function _logTailSection(
  run: LoadedRun,
  phase: ReturnType<typeof erroredPhases>[number],
): Section {
  const tail = run.logTail(phase.name);
  return {
    text: [
      "<details>",
      `<summary>${verdictLabel("ERROR")} ${escapeHtml(phase.name)} log tail (${phase.status}${
        phase.exit_code !== null ? `, exit ${phase.exit_code}` : ""
      })</summary>`,
      "",
      codeBlock(tail === "" ? "(no log output)" : tail),
      "",
      "</details>",
    ].join("\n"),
    brief: `_${mdText(phase.name)} log tail: see report.html._`,
  };
}

/** The phases table, folded under its counts. */
function _phasesSection(
  run: LoadedRun,
  existingFiles: Set<string>,
  resolve: LinkResolver,
): Section {
  const s = run.summary;
  const phases = phasesTable(run, existingFiles);
  const cached = s.phases.filter((p) => p.cached).length;
  return {
    text: `<details><summary>${
      escapeHtml(
        `${phases.title}: ${s.phases.length}, ${
          erroredPhases(run).length
        } failed, ${cached} cached`,
      )
    }</summary>\n\n${mdTable(phases, resolve)}\n\n</details>`,
    brief: `_${phases.title}: see report.html._`,
  };
}

/** The footer: harness version and the links to the other outputs. */
function _footer(run: LoadedRun, resolve: LinkResolver): Section {
  return {
    text: `<sub>parity harness ${
      mdText(run.summary.harness_version ?? "")
    } · interactive charts: [report.html](${
      resolve("report.html")
    }) · machine-readable: [summary.json](${resolve("summary.json")}), [junit.xml](${
      resolve("junit.xml")
    })</sub>`,
  };
}

/**
 * Joins sections within `budget` characters: sections with a `brief` give way from the last one
 * up; if that is still too long, the text is cut at a line boundary with a note.
 */
export function fitComment(parts: { text: string; brief?: string }[], budget: number): string {
  const texts = parts.map((p) => p.text);
  const join = () => texts.filter((t) => t !== "").join("\n\n") + "\n";
  for (let i = parts.length - 1; i >= 0 && join().length > budget; i--) {
    const brief = parts[i].brief;
    if (brief !== undefined) texts[i] = brief;
  }
  const whole = join();
  if (whole.length <= budget) return whole;
  const note = "\n\n_Cut to fit a pull-request comment; the full report is report.html._\n";
  const cut = whole.slice(0, budget - note.length);
  return cut.slice(0, Math.max(0, cut.lastIndexOf("\n"))) + note;
}

/**
 * Renders `report.md` for a loaded run.
 *
 * @param run The run.
 * @param charts Charts written under `<run>/charts/`.
 * @param existingFiles Run-relative paths that exist (log links are shown only for these).
 * @param options Image base URL and budget.
 */
export function renderMarkdown(
  run: LoadedRun,
  charts: ChartLink[],
  existingFiles: Set<string>,
  options: MarkdownOptions = {},
): string {
  const resolve = runLinkResolver(run.runDir, options.imageBaseUrl);
  return fitComment(
    sections(run, charts, existingFiles, resolve),
    options.budget ?? COMMENT_BUDGET,
  );
}
