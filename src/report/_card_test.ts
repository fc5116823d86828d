import assert from "node:assert/strict";
import { join } from "node:path";
import type { RunSummary } from "../types/summary.ts";
import { makeFixtureRun } from "../../test/_testing/run_fixture.ts";
import { renderRun } from "./render_run.ts";
import { renderJunit } from "./junit.ts";

const FINDING = {
  code: "cause-converter",
  verdict: "FAIL" as const,
  title: "Native resumes pass; universal and reshard resumes fail: the converter.",
  headline: "baseline~resume-universal FAIL, first divergent step 21",
  next: "Inspect the universal converter; set `checkpoint.load_universal: true`.",
  comparisons: ["baseline~resume-universal"],
  evidence: ["2 comparisons first fail at step 21 (a=1, b=2): baseline~resume-universal, x"],
};

Deno.test("reports open with the root-cause card: report.md, report.html and junit.xml", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "parity_card_" });
  try {
    const fixture = await makeFixtureRun(tmp, { verdict: "FAIL" });
    const path = join(fixture.runDir, "summary.json");
    const summary: RunSummary = JSON.parse(await Deno.readTextFile(path));
    summary.findings = [FINDING];
    await Deno.writeTextFile(path, JSON.stringify(summary));
    await renderRun(fixture.runDir);
    const md = (await Deno.readTextFile(join(fixture.runDir, "report.md"))).split("\n");
    // Verdict, marker, blank, then the card before any table.
    assert.equal(
      md[3],
      "> **❌ FAIL · cause-converter** — Native resumes pass; universal and reshard resumes fail: " +
        "the converter.",
    );
    assert.match(md.slice(4, 8).join("\n"), /\*\*Next:\*\* Inspect .* checkpoint.load\\_universal/);
    const html = await Deno.readTextFile(join(fixture.runDir, "report.html"));
    const card = html.indexOf('data-code="cause-converter"');
    assert.ok(card > 0 && card < html.indexOf('<h2 id="state">'), "card before the tables");
    const xml = renderJunit([{ summary }]);
    assert.match(xml, /<property name="root_cause" value="cause-converter: Native resumes/);
    assert.match(xml, /<system-out>❌ FAIL · cause-converter: Native .*\nnext: Inspect/);
    // A summary without findings (older runs, PASS) renders no card.
    delete summary.findings;
    assert.doesNotMatch(renderJunit([{ summary }]), /system-out|root_cause/);
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
