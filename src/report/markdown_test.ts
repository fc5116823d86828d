import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { makeFixtureRun } from "../../test/_testing/run_fixture.ts";
import { renderRun } from "./render_run.ts";
import { codeBlock, mdTable, mdText, reportMarker, verdictLine } from "./markdown.ts";

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

Deno.test("renderMarkdown() FAIL report: verdict first line, marker, and the divergence in the first table", async () => {
  const { tmp, md, summary } = await renderedMarkdown("FAIL");
  try {
    const lines = md.split("\n");
    assert.equal(lines[0], "## ❌ FAIL — quickstart · 20261129T101500Z-ab12cd");
    assert.equal(lines[1], "<!-- parity-report:quickstart -->");
    const rows = tableAfter(md, "Comparisons");
    assert.equal(rows[0][0], "comparison");
    assert.equal(rows.length, 2 + summary.comparisons.length);
    const failing = rows.find((r) => r[0] === "baseline~resume-universal")!;
    const d = summary.comparisons[1].divergence!;
    assert.deepEqual(failing.slice(1, 8), [
      "loss",
      "exact",
      "21–40",
      "20",
      "21",
      String(d.a),
      String(d.b),
    ]);
    assert.equal(failing[10], "❌ FAIL");
    assert.equal(rows.find((r) => r[0] === "baseline~resume-plan")![10], "💥 ERROR");
    // The first table is the comparisons table.
    assert.ok(md.indexOf("### Comparisons") < md.indexOf("### State checks"));
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("renderMarkdown() details hold ±5 steps around the first divergence with both values", async () => {
  const { tmp, md, losses } = await renderedMarkdown("FAIL");
  try {
    const open = md.indexOf(
      "<summary>❌ FAIL baseline~resume-universal: first divergence at step 21</summary>",
    );
    assert.ok(open > 0, "details block for the failing comparison");
    const block = md.slice(open, md.indexOf("</details>", open));
    const steps = [...block.matchAll(/^\| (?:\*\*)?(\d+)/gm)].map((m) => Number(m[1]));
    assert.deepEqual(steps, [16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26]);
    const a = losses.baseline.get(21)!, b = losses["resume-universal"].get(21)!;
    assert.ok(
      block.includes(`| **21 ← first divergence** | ${a} | ${b} | ${b - a} |`),
      "divergent row shows a, b and b − a at full precision",
    );
    assert.match(block, /!\[[^\]]+\]\(charts\/diff-baseline_resume-universal\.png\)/);
    // The ERROR comparison has no steps at all: it is listed with its reason, not given a table.
    assert.match(
      md,
      /<summary>💥 ERROR: 1 comparison could not be judged<\/summary>\n\n- baseline~resume-plan: phase resume-plan failed: no metrics\n/,
    );
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("renderMarkdown() sections: state, plan sync, noise floor, phases and the ERROR log tail", async () => {
  const { tmp, md } = await renderedMarkdown("FAIL");
  try {
    assert.deepEqual(tableAfter(md, "State checks")[3], [
      "resume-universal",
      "❌ FAIL",
      "rng, sampler",
      "params, rng, sampler",
    ]);
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
    assert.deepEqual(tableAfter(md, "Noise floor")[2], ["2", "no", "1e-7", "1e-6", "0"]);
    const diag = tableAfter(md, "Diagnostics")[2];
    assert.equal(diag[3], "lr has at most 4 decimals \\| check the trainer");
    const phases = tableAfter(md, "Phases");
    const split = phases.find((r) => r[0] === "split")!;
    assert.equal(split[4], "yes");
    const plan = phases.find((r) => r[0] === "resume-plan")!;
    assert.equal(plan[2], "💥 failed: exited with code 1");
    assert.match(plan[6], /\[stderr\]\(phases\/resume-plan\/stderr\.log\)/);
    const tail = md.slice(md.indexOf("<summary>💥 resume-plan log tail"));
    assert.match(
      tail,
      /```text\nloading plan <plan\.json> & shards\nTraceback: KeyError: 'layers\.0\.experts\.w1'\nfatal: missing segment\n```/,
    );
    assert.ok(!md.includes("\u001b"), "ANSI codes stripped");
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("renderMarkdown() links only images and logs that exist on disk", async () => {
  const { tmp, md, runDir } = await renderedMarkdown("FAIL");
  try {
    const links = [...md.matchAll(/\]\(([^)]+)\)/g)].map((m) => decodeURI(m[1]));
    const images = [...md.matchAll(/!\[[^\]]*\]\(([^)]+\.png)\)/g)].map((m) => m[1]);
    assert.ok(images.length >= 5, `${images.length} images`);
    assert.ok(images.includes("charts/loss.png"));
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

Deno.test("renderMarkdown() PASS report has no details blocks and a PASS first line", async () => {
  const { tmp, md } = await renderedMarkdown("PASS");
  try {
    assert.equal(md.split("\n")[0], "## ✅ PASS — quickstart · 20261129T101500Z-ab12cd");
    assert.doesNotMatch(md, /<details>/);
    assert.ok(tableAfter(md, "Comparisons").slice(2).every((r) => r[10] === "✅ PASS"));
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
