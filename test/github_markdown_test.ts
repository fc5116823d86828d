/// <reference lib="dom" />
/**
 * Every kind of report.md, and the suite index, rendered by GitHub's own renderer (cmark-gfm,
 * `test/_testing/ci_tools.ts`) and checked in the HTML it produces: no strikethrough, every
 * Markdown table a table with all its rows and cells, every link and image pointing at a file
 * the run wrote, and the names a reviewer looks for (comparison names such as
 * `baseline~resume-native`) readable as written. A screenshot of each rendered comment is kept in
 * `test_output/github_comment_<kind>.png`.
 */

import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { launchChromium } from "./_testing/chromium.ts";
import { CMARK_GFM_IGNORE, renderGfm } from "./_testing/ci_tools.ts";
import { denoCommand, PROJECT, runCli, writeExperiment } from "./_testing/cli_harness.ts";
import { makeFixtureRun } from "./_testing/run_fixture.ts";
import { quickstartRaw } from "./_testing/experiment_files.ts";
import { loadRun } from "../src/report/load_run.ts";
import { renderMarkdown } from "../src/report/markdown.ts";
import type { RunSummary } from "../src/types/summary.ts";

const TEST_OUTPUT = join(PROJECT, "test_output");
const BASE_URL = "https://ci.example.org/artifacts/results/";

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'" };
const decode = (s: string) =>
  s.replace(
    /&(#x[0-9a-f]+|#\d+|\w+);/gi,
    (m, e: string) =>
      e.startsWith("#x")
        ? String.fromCodePoint(parseInt(e.slice(2), 16))
        : e.startsWith("#") && e !== "#39"
        ? String.fromCodePoint(parseInt(e.slice(1), 10))
        : ENTITIES[e] ?? m,
  );

/** The visible text of rendered HTML, code blocks left out. */
function visibleText(html: string): string {
  return decode(
    html.replace(/<pre[\s\S]*?<\/pre>/g, " ").replace(/<!--[\s\S]*?-->/g, "").replace(
      /<[^>]+>/g,
      "",
    ),
  );
}

/** The Markdown tables of `md` outside code fences: rows of raw cells, split as GFM splits them. */
function markdownTables(md: string): string[][][] {
  const tables: string[][][] = [];
  let fence = false;
  let current: string[][] | null = null;
  for (const line of md.split("\n")) {
    if (/^(?:> )?```/.test(line)) fence = !fence;
    const row = !fence && line.startsWith("|") ? line : null;
    if (row === null) {
      current = null;
      continue;
    }
    const cells = row.replace(/^\|/, "").replace(/(?<!\\)\|\s*$/, "").split(/(?<!\\)\|/);
    if (current === null) tables.push(current = []);
    if (!/^\|(?:\s*:?-+:?\s*\|)+$/.test(row)) current.push(cells);
  }
  return tables;
}

interface Target {
  /** Folder the report sits in (relative links resolve against it). */
  dir: string;
  /** Results folder that BASE_URL stands for, when links are absolute. */
  results?: string;
}

/** What is wrong with `html`, the rendering of `md`, as sentences (empty when nothing is). */
async function problems(md: string, html: string, target: Target, expect: string[]) {
  const found: string[] = [];
  if (/<del>/.test(html)) found.push(`strikethrough: ${html.match(/.{0,60}<del>.{0,60}/)![0]}`);
  const tables = markdownTables(md);
  const htmlTables = [...html.matchAll(/<table>([\s\S]*?)<\/table>/g)].map((m) => m[1]);
  if (htmlTables.length !== tables.length) {
    found.push(`${tables.length} Markdown tables rendered as ${htmlTables.length} <table>s`);
  }
  tables.forEach((rows, i) => {
    const width = rows[0].length;
    rows.forEach((cells, r) => {
      if (cells.length !== width) {
        found.push(`table ${i + 1} row ${r + 1}: ${cells.length} cells under ${width} headers`);
      }
    });
    const rendered = (htmlTables[i] ?? "").match(/<tr>/g)?.length ?? 0;
    if (rendered !== rows.length) {
      found.push(`table ${i + 1}: ${rows.length} rows rendered as ${rendered}`);
    }
  });
  const links = [
    ...[...html.matchAll(/<a href="([^"]*)"/g)].map((m) => decode(m[1])),
    ...[...html.matchAll(/<img src="([^"]*)"/g)].map((m) => decode(m[1])),
  ];
  for (const link of links) {
    let file: string | null = null;
    if (target.results !== undefined) {
      if (link.startsWith(BASE_URL)) {
        file = join(target.results, decodeURI(link.slice(BASE_URL.length)));
      }
    } else if (!/^[a-z]+:/i.test(link) && !link.startsWith("/")) {
      file = join(target.dir, decodeURI(link));
    }
    if (file === null) {
      found.push(`link to something the run did not write: ${link}`);
      continue;
    }
    try {
      await Deno.stat(file);
    } catch {
      found.push(`link to a missing file: ${link}`);
    }
  }
  const text = visibleText(html);
  const leftover = text.match(/.{0,30}(?:\]\(|!\[|\\[\\`*_[\]~|#]).{0,30}/);
  if (leftover) found.push(`Markdown left in the text: ${leftover[0]}`);
  for (const name of expect) {
    if (!text.includes(name)) found.push(`"${name}" is not in the rendered text`);
  }
  return found;
}

/** Renders `md` with cmark-gfm, asserts no problems, and screenshots it as a GitHub comment. */
async function check(kind: string, md: string, target: Target, expect: string[]) {
  const html = await renderGfm(md);
  assert.deepEqual(await problems(md, html, target, expect), [], `${kind} report.md`);
  await Deno.mkdir(TEST_OUTPUT, { recursive: true });
  await Deno.writeTextFile(
    join(TEST_OUTPUT, `github_comment_${kind}.html`),
    commentPage(html, target),
  );
  return html;
}

/** A page that frames the HTML the way a GitHub comment shows it (images load from the run). */
function commentPage(html: string, target: Target): string {
  const base = target.results === undefined ? `file://${target.dir}/` : `file://${target.results}/`;
  const body = target.results === undefined ? html : html.replaceAll(BASE_URL, base);
  return `<!doctype html><html><head><meta charset="utf-8"><base href="${base}"><style>
body{font:14px/1.5 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#1f2328;margin:0;background:#f6f8fa}
.comment{max-width:880px;margin:16px auto;border:1px solid #d1d9e0;border-radius:6px;background:#fff;padding:16px}
table{border-collapse:collapse;display:block;overflow:auto}th,td{border:1px solid #d1d9e0;padding:6px 13px}
tr:nth-child(2n){background:#f6f8fa}img{max-width:100%}pre{background:#f6f8fa;padding:16px;overflow:auto}
code{background:#eff1f3;padding:.2em .4em;border-radius:6px;font-size:85%}blockquote{color:#59636e;border-left:.25em solid #d1d9e0;margin:0;padding:0 1em}
</style></head><body><div class="comment">${body}</div></body></html>`;
}

/** Screenshots every comment page written by {@link check}; every image in it must load. */
async function screenshots(kinds: string[]) {
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 960, height: 900 } });
    for (const kind of kinds) {
      const file = join(TEST_OUTPUT, `github_comment_${kind}.html`);
      await page.goto(`file://${file}`, { waitUntil: "load" });
      // Fold-outs open, as a reviewer would click them.
      await page.evaluate(() =>
        document.querySelectorAll("details").forEach((d) => (d as HTMLDetailsElement).open = true)
      );
      const broken = await page.evaluate(() =>
        [...document.images].filter((i) => !i.complete || i.naturalWidth === 0).map((i) => i.src)
      );
      assert.deepEqual(broken, [], `${kind}: images that do not load`);
      await page.screenshot({
        path: join(TEST_OUTPUT, `github_comment_${kind}.png`),
        fullPage: true,
      });
    }
  } finally {
    await browser.close();
  }
}

function names(summary: RunSummary): string[] {
  return [summary.experiment, ...summary.comparisons.map((c) => c.name)];
}

Deno.test({
  name:
    "report.md of PASS, FAIL, ERROR and ABSTAIN runs and the suite index render intact on GitHub",
  ignore: CMARK_GFM_IGNORE,
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "parity_gfm_" });
    try {
      const noisy = (...flags: string[]) => denoCommand("noisy_trainer.ts", ...flags);
      const quickstart = quickstartRaw();
      const files = [
        await writeExperiment(dir, "pass.yaml", { ...quickstart, name: "gfm-pass" }),
        await writeExperiment(dir, "fail.yaml", {
          ...quickstart,
          name: "gfm-fail",
          trainer: {
            ...(quickstart.trainer as object),
            args: { ...(quickstart.trainer as { args: object }).args, fault: "skip-rng-restore" },
          },
        }),
        await writeExperiment(dir, "error.yaml", {
          name: "gfm-error",
          schedule: { steps: 6, save_at: 3 },
          trainer: { command: denoCommand("fail_trainer.ts"), timeout: 60 },
          resume: { native: { from: "native" } },
        }),
        await writeExperiment(dir, "abstain.yaml", {
          name: "gfm-abstain",
          schedule: { steps: 12, save_at: 6 },
          trainer: { command: noisy() },
          resume: { native: { from: "native" } },
          noise_floor: { repeats: 2 },
        }),
      ];
      const results = join(dir, "results");
      const run = await runCli(["run", ...files, "--results", results, "--quiet"]);
      const verdicts: Record<string, string> = {};
      const kinds: string[] = [];
      for (const name of ["gfm-pass", "gfm-fail", "gfm-error", "gfm-abstain"]) {
        const runDir = join(results, name, "latest");
        const summary: RunSummary = JSON.parse(
          await Deno.readTextFile(join(runDir, "summary.json")),
        );
        verdicts[name] = summary.verdict;
        const md = await Deno.readTextFile(join(runDir, "report.md"));
        const kind = summary.verdict.toLowerCase();
        await check(kind, md, { dir: await Deno.realPath(runDir) }, names(summary));
        kinds.push(kind);
      }
      assert.deepEqual(verdicts, {
        "gfm-pass": "PASS",
        "gfm-fail": "FAIL",
        "gfm-error": "ERROR",
        "gfm-abstain": "ABSTAIN",
      }, run.stderr.slice(-3000));
      // The same FAIL report with absolute links, as a CI job posts it.
      const fail = join(results, "gfm-fail", "latest");
      const rerender = await runCli(["report", fail, "--image-base-url", BASE_URL]);
      assert.equal(rerender.code, 0, rerender.stderr);
      const failSummary: RunSummary = JSON.parse(
        await Deno.readTextFile(join(fail, "summary.json")),
      );
      const absolute = await Deno.readTextFile(join(fail, "report.md"));
      assert.match(absolute, /!\[[^\]]*\]\(https:\/\/ci\.example\.org\//);
      await check("fail_absolute", absolute, {
        dir: await Deno.realPath(fail),
        results: await Deno.realPath(results),
      }, names(failSummary));
      kinds.push("fail_absolute");
      const suite = [...Deno.readDirSync(results)].find((e) => e.name.startsWith("suite-"))!;
      const suiteDir = join(results, suite.name);
      await check("suite", await Deno.readTextFile(join(suiteDir, "index.md")), {
        dir: await Deno.realPath(suiteDir),
      }, ["gfm-pass", "gfm-fail", "gfm-error", "gfm-abstain"]);
      kinds.push("suite");
      await screenshots(kinds);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "report.md of a 3,000-comparison run renders intact on GitHub within the comment limit",
  ignore: CMARK_GFM_IGNORE,
  async fn() {
    const tmp = await Deno.makeTempDir({ prefix: "parity_gfm_" });
    try {
      const fixture = await makeFixtureRun(tmp, { verdict: "FAIL" });
      const s = fixture.summary;
      const template = s.comparisons.find((c) => c.verdict === "FAIL")!;
      for (let k = 0; k < 3000; k++) {
        s.comparisons.push({ ...template, name: `baseline~resume-x_${k}~y` });
      }
      await Deno.writeTextFile(`${fixture.runDir}/summary.json`, JSON.stringify(s));
      const md = renderMarkdown(await loadRun(fixture.runDir), [], new Set());
      // Markdown only (3,000 difference charts are not what this test is about); the footer's
      // links name the other outputs, which renderRun would write.
      for (const file of ["report.md", "report.html", "junit.xml"]) {
        await Deno.writeTextFile(join(fixture.runDir, file), file === "report.md" ? md : "");
      }
      const shown = [...md.matchAll(/^\| (baseline\\~resume-x\\_\d+\\~y) /gm)].map((m) =>
        m[1].replace(/\\/g, "")
      );
      assert.ok(shown.length >= 10, `${shown.length} rows of the big table`);
      const html = await renderGfm(md);
      assert.deepEqual(
        await problems(md, html, { dir: dirname(join(fixture.runDir, "report.md")) }, shown),
        [],
      );
    } finally {
      await Deno.remove(tmp, { recursive: true });
    }
  },
});
