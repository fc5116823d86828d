/**
 * Metrics outside the schedule prevent PASS: a step far beyond the last step (1e30) and a
 * resume's step before its window are error diagnostics, not silently ignored records.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { denoCommand, latestSummary, runCli, writeExperiment } from "./_testing/cli_harness.ts";

Deno.test("run: a metrics step beyond the schedule or before a resume window is not PASS", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const cases = [
      { phase: "baseline", step: "1e30", code: "metrics-beyond-schedule" },
      { phase: "resume-native", step: "1", code: "metrics-before-resume-window" },
    ];
    for (const [i, c] of cases.entries()) {
      const file = await writeExperiment(dir, `x${i}.yaml`, {
        name: `stray${i}`,
        schedule: { steps: 4, save_at: 2 },
        trainer: {
          command: denoCommand("echo_trainer.ts", "stray-marker"),
          timeout: 120,
          env: { STRAY_PHASE: c.phase, STRAY_STEP: c.step },
        },
        resume: { native: { from: "native" } },
      });
      const results = join(dir, "results");
      const run = await runCli(["run", file, "--results", results, "--quiet"]);
      assert.equal(run.code, 3, `${c.code}: ${run.stderr}`);
      const summary = await latestSummary(results, `stray${i}`);
      assert.equal(summary.verdict, "ERROR");
      const found = summary.diagnostics.find((d) => d.code === c.code);
      assert.equal(found?.phase, c.phase, JSON.stringify(summary.diagnostics));
      // The comparison of that phase says ERROR too, everywhere the run is shown.
      const compared = summary.comparisons.find((x) => x.name === "baseline~resume-native");
      assert.equal(compared?.verdict, "ERROR", compared?.reason);
      assert.ok(compared?.codes?.includes(c.code), JSON.stringify(compared));
      const runDir = join(results, `stray${i}`, "latest");
      const report = await Deno.readTextFile(join(runDir, "report.md"));
      const junit = await Deno.readTextFile(join(runDir, "junit.xml"));
      assert.match(report, /\| baseline\\~resume-native \| 💥 ERROR \|/);
      assert.match(junit, /name="baseline~resume-native"[^]*?<error message="[^"]*metrics-/);
      assert.doesNotMatch(junit, /<testsuites [^>]*errors="0"/);
      assert.match(
        run.stdout + run.stderr,
        new RegExp(`ERROR baseline~resume-native: .*${c.code}`),
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
