import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { makeFixtureRun } from "../../test/_testing/run_fixture.ts";
import { renderRun } from "./render_run.ts";
import {
  codeBlock,
  COMMENT_BUDGET,
  GITHUB_COMMENT_LIMIT,
  imageBaseUrlProblem,
  mdCode,
  mdTable,
  mdText,
  renderMarkdown,
  reportMarker,
  verdictLine,
} from "./markdown.ts";
import { loadRun } from "./load_run.ts";
import { appendHistory } from "./history.ts";

async function renderedMarkdown(verdict: "PASS" | "FAIL") {
  const tmp = await Deno.makeTempDir({ prefix: "parity_md_" });
  const fixture = await makeFixtureRun(tmp, { verdict, noisyRepeats: verdict === "FAIL" });
  await renderRun(fixture.runDir);
  const md = await Deno.readTextFile(`${fixture.runDir}/report.md`);
  return { tmp, md, ...fixture };
}

/** The Markdown table that follows `### <heading>`, as rows of cells. */
function tableAfter(md: string, heading: string): string[][] {
  const start = md.indexOf(`### ${heading}\n`);
  assert.ok(start >= 0, `section ${heading}`);
  const lines = md.slice(start).split("\n").slice(2);
  const rows: string[][] = [];
  for (const line of lines) {
    if (!line.startsWith("|")) break;
    rows.push(line.slice(1, -1).split(/(?<!\\)\|/).map((c) => c.trim()));
  }
  return rows;
}

Deno.test("renderMarkdown() FAIL comment: verdict, marker, card, then only what differs", async () => {
  const { tmp, md, summary } = await renderedMarkdown("FAIL");
  try {
    const lines = md.split("\n");
    assert.equal(lines[0], "## ❌ FAIL — quickstart · 20261129T101500Z-ab12cd");
    assert.equal(lines[1], "<!-- parity-report:quickstart -->");
    assert.match(md, /diverged: resume-universal @ 21/);
    const rows = tableAfter(md, "What differs");
    assert.equal(rows[0][0], "comparison");
    const notPass = summary.comparisons.filter((c) => c.verdict !== "PASS");
    assert.equal(rows.length, 2 + notPass.length, "PASS rows are not in the table");
    const failing = rows.find((r) => r[0] === "baseline\\~resume-universal")!;
    const d = summary.comparisons[1].divergence!;
    assert.deepEqual(failing.slice(1, 5), ["❌ FAIL", "21", String(d.a), String(d.b)]);
    assert.equal(rows.find((r) => r[0] === "baseline\\~resume-plan")![1], "💥 ERROR");
    assert.match(md, /✅ PASS: 2 comparisons \(baseline\\~resume-native, /);
    // State checks sit above the comparisons; no "vs last run" column without history.
    assert.ok(md.indexOf("### State checks") < md.indexOf("### What differs"));
    assert.ok(!rows[0].includes("vs last run"));
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("renderMarkdown() one block per broken phase: the compared window around the divergence", async () => {
  const { tmp, md, losses } = await renderedMarkdown("FAIL");
  try {
    const open = md.indexOf(
      "<summary>resume-universal first diverges at step 21 (baseline~resume-universal, exact lane)</summary>",
    );
    assert.ok(open > 0, "block for the broken phase");
    assert.equal(md.match(/<summary>resume-universal first diverges/g)!.length, 1);
    const block = md.slice(open, md.indexOf("</details>", open));
    const steps = [...block.matchAll(/^\| (?:\*\*)?(\d+)/gm)].map((m) => Number(m[1]));
    // Steps before the resume have no b value: they are not shown as rows of dashes.
    assert.deepEqual(steps, [21, 22, 23, 24, 25, 26]);
    assert.doesNotMatch(block, /\| — \| — \|/);
    const a = losses.baseline.get(21)!, b = losses["resume-universal"].get(21)!;
    assert.ok(
      block.includes(`| **21 ← first divergence** | ${a} | ${b} | ${b - a} |`),
      "divergent row shows a, b and b − a at full precision",
    );
    assert.match(block, /!\[[^\]]+\]\(charts\/diff-baseline_resume-universal\.png\)/);
    // The ERROR comparison has no steps at all: it is listed with its reason, not given a table.
    assert.match(
      md,
      /<summary>💥 ERROR: 1 comparison could not be judged<\/summary>\n\n- baseline\\~resume-plan: phase resume-plan failed: no metrics\n/,
    );
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("renderMarkdown() sections: state, plan sync, noise floor, phases and the ERROR log tail", async () => {
  const { tmp, md } = await renderedMarkdown("FAIL");
  try {
    assert.deepEqual(tableAfter(md, "State checks")[2], [
      "resume-universal",
      "❌ FAIL",
      "rng, sampler",
      "params, rng, sampler",
    ]);
    assert.match(
      md,
      /✅ PASS: resume-native matched every compared component\. _1 resume emitted no digests\._/,
    );
    assert.deepEqual(tableAfter(md, "Plan sync")[2], [
      "first\\_holder",
      "✅ PASS",
      "96",
      "48\u00a0KiB",
      "16\u00a0KiB",
      "32\u00a0KiB",
      "12\u00a0KiB",
      "—",
    ]);
    assert.deepEqual(tableAfter(md, "Noise floor")[2], [
      "2",
      "no",
      "1e-7",
      "1e-6",
      "max(max rel × 10, 9.537e-7)",
      "0",
    ]);
    const diag = tableAfter(md, "Diagnostics")[2];
    assert.equal(diag[3], "lr has at most 4 decimals \\| check the trainer");
    const start = md.indexOf("<details><summary>Phases: ");
    assert.ok(start > 0, "the phases table folds away");
    const phases = md.slice(start).split("\n").filter((l) => l.startsWith("| ")).map((l) =>
      l.slice(1, -1).split(/(?<!\\)\|/).map((c) => c.trim())
    );
    const split = phases.find((r) => r[0] === "split")!;
    assert.equal(split[4], "yes");
    const plan = phases.find((r) => r[0] === "resume-plan")!;
    assert.equal(plan[2], "💥 failed: exited with code 1");
    assert.match(plan[6], /\[stderr\]\(phases\/resume-plan\/stderr\.log\)/);
    const tail = md.slice(md.indexOf("<summary>💥 ERROR resume-plan log tail"));
    assert.match(
      tail,
      /```text\nloading plan <plan\.json> & shards\nTraceback: KeyError: 'layers\.0\.experts\.w1'\nfatal: missing segment\n```/,
    );
    assert.ok(!md.includes("\u001b"), "ANSI codes stripped");
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("renderMarkdown() links only images and logs that exist, and no flat-zero chart", async () => {
  const { tmp, md, runDir } = await renderedMarkdown("FAIL");
  try {
    const links = [...md.matchAll(/\]\(([^)]+)\)/g)].map((m) => decodeURI(m[1]));
    const images = [...md.matchAll(/!\[[^\]]*\]\(([^)]+\.png)\)/g)].map((m) => m[1]);
    assert.ok(images.includes("charts/loss.png"));
    assert.ok(
      !images.includes("charts/diff-baseline_resume-native.png"),
      "identical pair left out",
    );
    for (const link of links) {
      assert.ok(!link.startsWith("/") && !link.includes("://"), `relative: ${link}`);
      const info = await Deno.stat(join(runDir, link));
      assert.ok(info.isFile, link);
    }
    assert.equal(dirname(images[0]), "charts");
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("renderMarkdown() with --image-base-url: every link is absolute under the base", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "parity_md_" });
  try {
    const { runDir } = await makeFixtureRun(tmp, { verdict: "FAIL" });
    await renderRun(runDir, { imageBaseUrl: "https://ci.example.org/pr-7/results/" });
    const md = await Deno.readTextFile(`${runDir}/report.md`);
    const links = [...md.matchAll(/\]\(([^)]+)\)/g)].map((m) => m[1]);
    const images = [...md.matchAll(/!\[[^\]]*\]\(([^)]+)\)/g)].map((m) => m[1]);
    assert.ok(images.length >= 2, `${images.length} images`);
    const base = "https://ci.example.org/pr-7/results/quickstart/20261129T101500Z-ab12cd/";
    for (const link of links) assert.ok(link.startsWith(base), link);
    // Each image names a chart that exists in the run folder.
    for (const image of images) {
      assert.ok((await Deno.stat(join(runDir, decodeURI(image.slice(base.length))))).isFile);
    }
    assert.equal(imageBaseUrlProblem("https://ci.example.org/x"), null);
    assert.match(imageBaseUrlProblem("charts/")!, /not an absolute URL/);
    assert.match(imageBaseUrlProblem("file:///tmp/x")!, /use https/);
    assert.match(imageBaseUrlProblem("https://user:tok@example.org/")!, /credentials/);
    assert.match(imageBaseUrlProblem("https://example.org/?sig=1")!, /query/);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("renderMarkdown() compares each comparison with the experiment's last run", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "parity_md_" });
  try {
    const before = await makeFixtureRun(tmp, {
      verdict: "PASS",
      runId: "20261128T101500Z-aa",
      finishedAt: "2026-11-28T10:15:41Z",
    });
    await appendHistory(tmp, before.summary, before.runDir);
    const now = await makeFixtureRun(tmp, { verdict: "FAIL" });
    await renderRun(now.runDir);
    const md = await Deno.readTextFile(`${now.runDir}/report.md`);
    const rows = tableAfter(md, "What differs");
    const column = rows[0].indexOf("vs last run");
    assert.ok(column > 0, "the column appears once there is history");
    assert.equal(rows.find((r) => r[0] === "baseline\\~resume-universal")![column], "was PASS");
    assert.match(
      md.split("\n").find((l) => l.startsWith("2 comparisons") || /comparisons,/.test(l))!,
      /last run of this configuration 20261128T101500Z-aa: PASS/,
    );
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("renderMarkdown() stays under GitHub's comment limit for a huge failing run", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "parity_md_" });
  try {
    const fixture = await makeFixtureRun(tmp, { verdict: "FAIL" });
    const s = fixture.summary;
    const template = s.comparisons.find((c) => c.verdict === "FAIL")!;
    // 3,000 failing comparisons with long names and 200 crashed phases with 40-line log tails.
    for (let k = 0; k < 3000; k++) {
      s.comparisons.push({ ...template, name: `baseline~resume-${"x".repeat(40)}-${k}` });
    }
    for (let k = 0; k < 200; k++) {
      s.phases.push({
        name: `resume-crash-${k}`,
        role: "resume",
        status: "failed",
        cached: false,
        wall_s: 1,
        exit_code: 1,
        log_tail: Array.from({ length: 40 }, (_, i) => `line ${i} ${"y".repeat(80)}`).join("\n"),
      });
    }
    await Deno.writeTextFile(`${fixture.runDir}/summary.json`, JSON.stringify(s));
    // Markdown only: rendering 3,000 difference charts is not what this test is about.
    const md = renderMarkdown(await loadRun(fixture.runDir), [], new Set());
    assert.ok(md.length <= COMMENT_BUDGET, `${md.length} characters`);
    assert.ok([...md].length <= GITHUB_COMMENT_LIMIT);
    assert.equal(md.split("\n")[0], "## ❌ FAIL — quickstart · 20261129T101500Z-ab12cd");
    // The table keeps its first rows and says how many more differ; the blocks below it survive.
    assert.equal(tableAfter(md, "What differs").length, 2 + 30);
    assert.match(md, /_2\d{3} more comparisons differ: see report\.html\._/);
    assert.match(md, /### Where it diverged/);
    assert.match(md, /_Phases: see report\.html\._/);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("renderMarkdown() PASS comment: no tables of differences, no divergence blocks", async () => {
  const { tmp, md } = await renderedMarkdown("PASS");
  try {
    assert.equal(md.split("\n")[0], "## ✅ PASS — quickstart · 20261129T101500Z-ab12cd");
    assert.doesNotMatch(md, /### What differs|### Where it diverged|<details open>/);
    assert.match(md, /✅ PASS: \d+ comparisons?/);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("mdText(), codeBlock() and reportMarker() keep Markdown structure intact", () => {
  assert.equal(mdText("a|b\n<c>_d"), "a\\|b<br>&lt;c&gt;\\_d");
  assert.equal(codeBlock("x ``` y"), "````text\nx ``` y\n````");
  assert.equal(reportMarker("nightly--big"), "<!-- parity-report:nightly-big -->");
  assert.equal(verdictLine("q", "r", "ABSTAIN"), "## ⚠️ ABSTAIN — q · r");
  assert.equal(
    mdTable({
      id: "t",
      title: "T",
      headers: ["a", "n"],
      numeric: [false, true],
      rows: [[{ text: "x", href: "p q.log" }, { text: "1" }]],
      empty: "",
    }),
    "| a | n |\n| --- | ---: |\n| [x](p%20q.log) | 1 |",
  );
});

Deno.test("mdText() and mdCode() escape what cmark-gfm would turn into markup", () => {
  assert.equal(mdText("baseline~resume-native"), "baseline\\~resume-native");
  assert.equal(mdText("a & b &amp;"), "a &amp; b &amp;amp;");
  assert.equal(mdText("# not a heading"), "\\# not a heading");
  assert.equal(mdText("1. not a list"), "1\\. not a list");
  assert.equal(mdText("0.082 and -0.5"), "0.082 and -0.5", "numbers stay readable");
  assert.equal(mdText("see www.example.org"), "see www<!-- -->.example.org");
  assert.equal(mdText("https://x.org"), "https:<!-- -->//x.org");
  assert.equal(mdText("ci@host.org"), "ci@<!-- -->host.org");
  assert.equal(mdText("sweep@lr=0.1"), "sweep@lr=0.1", "a matrix folder is no e-mail address");
  assert.equal(mdCode("a`b|c"), "``a`b\\|c``");
  assert.equal(mdCode("`x"), "`` `x ``");
});

Deno.test("renderMarkdown() shows identical divergences once, naming the other phases", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "parity_md_" });
  try {
    const fixture = await makeFixtureRun(tmp, { verdict: "FAIL" });
    const s = fixture.summary;
    const failing = s.comparisons.find((c) => c.verdict === "FAIL")!;
    const phase = s.phases.find((p) => p.name === failing.b)!;
    s.phases.push({ ...phase, name: "resume-copy" });
    s.comparisons.push({ ...failing, name: "baseline~resume-copy", b: "resume-copy" });
    await Deno.writeTextFile(`${fixture.runDir}/summary.json`, JSON.stringify(s));
    const md = renderMarkdown(await loadRun(fixture.runDir), [], new Set());
    const section = md.slice(md.indexOf("### Where it diverged"));
    assert.equal(section.match(/first diverges at/g)!.length, 1, "one block for both phases");
    assert.match(section, /<summary>resume-universal first diverges at step 21 .* \+1 identical</);
    assert.match(section, /same values\) in: resume-copy \(baseline\\~resume-copy, exact lane\)/);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("renderMarkdown() never counts the split's save check as a resume without digests", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "parity_md_" });
  try {
    const { runDir } = await makeFixtureRun(tmp, { verdict: "FAIL" });
    const path = join(runDir, "summary.json");
    const summary = JSON.parse(await Deno.readTextFile(path));
    summary.state_checks.push({
      phase: "split",
      check: "save",
      verdict: "N/A",
      available: false,
      differing: [],
    });
    await Deno.writeTextFile(path, JSON.stringify(summary));
    await renderRun(runDir);
    const md = await Deno.readTextFile(join(runDir, "report.md"));
    assert.match(
      md,
      /_1 resume and the save check \(split vs the baseline at the save step\) had no digests\._/,
    );
    assert.doesNotMatch(md, /2 resumes emitted no digests/);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
