import assert from "node:assert/strict";
import { join } from "node:path";
import { makeFixtureRun } from "../../test/_testing/run_fixture.ts";
import { compactUtc, suiteChange, writeSuiteIndex } from "./suite.ts";
import { appendHistory, readHistory } from "./history.ts";
import { COMMENT_BUDGET } from "./markdown.ts";

Deno.test("writeSuiteIndex() lists experiments worst verdict first with links to their reports", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "parity_suite_" });
  try {
    const a = await makeFixtureRun(tmp, { verdict: "PASS", experiment: "aaa-pass" });
    const b = await makeFixtureRun(tmp, { verdict: "FAIL", experiment: "zzz-fail" });
    const c = await makeFixtureRun(tmp, { verdict: "PASS", experiment: "mmm-error" });
    c.summary.verdict = "ERROR";
    for (const run of [a, b, c]) {
      for (const f of ["report.md", "report.html", "junit.xml"]) {
        await Deno.writeTextFile(`${run.runDir}/${f}`, "x");
      }
    }
    const when = new Date("2026-11-29T02:30:00Z");
    const index = await writeSuiteIndex(
      tmp,
      [a, b, c].map((r) => ({
        experiment: r.summary.experiment,
        runDir: r.runDir,
        summary: r.summary,
      })),
      { now: when },
    );
    assert.equal(index, `${tmp}/suite-20261129T023000Z/index.md`);
    const md = await Deno.readTextFile(index);
    assert.equal(md.split("\n")[0], "## ❌ FAIL — parity suite · 20261129T023000Z");
    const order = md.split("\n").filter((l) => /^\| (❌|💥|✅)/.test(l)).map((l) =>
      l.split(" | ")[1]
    );
    // PASS experiments fold into one line below the table.
    assert.deepEqual(order, ["zzz-fail", "mmm-error"]);
    assert.match(md, /<summary>✅ PASS: 1 experiment<\/summary>\n\n\[aaa-pass\]\(/);
    const links = [...md.matchAll(/\]\(([^)]+)\)/g)].map((m) => m[1]);
    assert.equal(links.length, 7);
    for (const link of links) {
      assert.ok((await Deno.stat(join(tmp, "suite-20261129T023000Z", link))).isFile, link);
    }
    const html = await Deno.readTextFile(`${tmp}/suite-20261129T023000Z/index.html`);
    assert.deepEqual([...html.matchAll(/<tr data-verdict="(\w+)"/g)].map((m) => m[1]), [
      "FAIL",
      "ERROR",
      "PASS",
    ]);
    const junit = await Deno.readTextFile(`${tmp}/suite-20261129T023000Z/junit.xml`);
    assert.deepEqual(
      [...junit.matchAll(/<testsuite name="([^"]+)"/g)].map((m) => m[1]).sort(),
      ["aaa-pass", "mmm-error", "zzz-fail"],
      "the suite's junit.xml holds one testsuite per experiment",
    );
    // A second suite in the same second gets its own folder.
    const again = await writeSuiteIndex(tmp, [], { now: when });
    assert.equal(again, `${tmp}/suite-20261129T023000Z-2/index.md`);
    assert.match(await Deno.readTextFile(again), /^## ✅ PASS — parity suite/);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("compactUtc() formats like run ids", () => {
  assert.equal(compactUtc(new Date("2026-11-29T10:15:00.123Z")), "20261129T101500Z");
});

Deno.test("writeSuiteIndex() marks what is new since the last run, names the cause, links the trend", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "parity_suite_" });
  try {
    // Last night: both experiments passed.
    for (const experiment of ["alpha", "beta"]) {
      const before = await makeFixtureRun(tmp, {
        verdict: "PASS",
        experiment,
        runId: "20261128T020000Z-aa",
        finishedAt: "2026-11-28T02:00:41Z",
      });
      await appendHistory(tmp, before.summary, before.runDir);
    }
    // Tonight: alpha breaks, beta still passes.
    const alpha = await makeFixtureRun(tmp, { verdict: "FAIL", experiment: "alpha" });
    alpha.summary.findings = [{
      code: "cause-converter",
      verdict: "FAIL",
      title: "the converter",
      next: "look",
      evidence: [],
    }];
    const beta = await makeFixtureRun(tmp, { verdict: "PASS", experiment: "beta" });
    for (const run of [alpha, beta]) await appendHistory(tmp, run.summary, run.runDir);
    const index = await writeSuiteIndex(
      tmp,
      [alpha, beta].map((r) => ({
        experiment: r.summary.experiment,
        runDir: r.runDir,
        summary: r.summary,
      })),
      { now: new Date("2026-11-29T02:30:00Z") },
    );
    const md = await Deno.readTextFile(index);
    const row = md.split("\n").find((l) => l.startsWith("| ❌ FAIL | alpha"))!;
    assert.match(
      row,
      /\| \*\*🆕 new FAIL \(was PASS\)\*\* \| cause-converter \| resume-universal @ 21 \|/,
    );
    assert.match(
      md,
      /1 not PASS, 1 new since the last run · \[history trend\]\(\.\.\/history\/index\.html\)/,
    );
    assert.ok(
      (await Deno.stat(join(tmp, "history", "index.html"))).isFile,
      "the trend is rendered",
    );
    const html = await Deno.readTextFile(index.replace(/index\.md$/, "index.html"));
    assert.match(html, /<span class="new">NEW<\/span> new FAIL \(was PASS\)/);
    assert.match(html, /<td>unchanged<\/td>/, "beta passed both nights");
    assert.deepEqual(
      suiteChange(beta.summary, await readHistory(tmp)),
      { text: "unchanged", isNew: false },
    );
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test("writeSuiteIndex() keeps index.md within the comment budget for a thousand experiments", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "parity_suite_" });
  try {
    const one = await makeFixtureRun(tmp, { verdict: "FAIL" });
    const entries = Array.from({ length: 1000 }, (_, k) => ({
      experiment: `nightly-${"z".repeat(60)}-${k}`,
      runDir: one.runDir,
      summary: { ...one.summary, experiment: `nightly-${k}` },
    }));
    const md = await Deno.readTextFile(await writeSuiteIndex(tmp, entries));
    assert.ok(md.length <= COMMENT_BUDGET, `${md.length}`);
    assert.match(md, /^## ❌ FAIL — parity suite/);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
