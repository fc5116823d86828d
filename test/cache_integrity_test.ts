/**
 * The cache verifies what it reuses: a cached metrics file truncated after completion is not
 * reused (the phase runs again, saying why), and `parity report` refuses to re-render a run
 * folder whose artifacts no longer match the hashes its phases recorded.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { denoCommand, latestSummary, runCli, writeExperiment } from "./_testing/cli_harness.ts";

Deno.test("cache: a truncated cached metrics file is run again; report refuses the tampered run", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = await writeExperiment(dir, "x.yaml", {
      name: "integrity",
      schedule: { steps: 4, save_at: 2 },
      trainer: { command: denoCommand("echo_trainer.ts", "integrity-marker"), timeout: 120 },
      resume: { native: { from: "native" } },
    });
    const results = join(dir, "results");
    const first = await runCli(["run", file, "--results", results, "--quiet"]);
    assert.equal(first.code, 0, first.stderr);
    const firstRun = join(results, "integrity", (await latestSummary(results, "integrity")).run_id);
    const metrics = join(firstRun, "phases", "resume-native", "metrics.jsonl");
    const text = await Deno.readTextFile(metrics);
    await Deno.writeTextFile(metrics, text.slice(0, text.length - 10));

    const report = await runCli(["report", firstRun]);
    assert.equal(report.code, 3, report.stderr);
    assert.match(report.stderr, /resume-native: metrics.jsonl changed since the phase completed/);

    const second = await runCli(["run", file, "--results", results]);
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stderr + second.stdout, /resume-native: not reusing the result of run/);
    const summary = await latestSummary(results, "integrity");
    const cached = Object.fromEntries(summary.phases.map((p) => [p.name, p.cached]));
    assert.equal(cached["resume-native"], false, "the tampered phase ran again");
    assert.equal(cached["baseline"], true, "untouched phases are still reused");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
