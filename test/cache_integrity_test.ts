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

Deno.test("report: a corrupted summary.json or edited resolved experiment is refused, naming the file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = await writeExperiment(dir, "x.yaml", {
      name: "corrupt",
      schedule: { steps: 4, save_at: 2 },
      trainer: { command: denoCommand("echo_trainer.ts", "corrupt-marker"), timeout: 120 },
      resume: { native: { from: "native" } },
    });
    const results = join(dir, "results");
    assert.equal((await runCli(["run", file, "--results", results, "--quiet"])).code, 0);
    const runDir = join(results, "corrupt", (await latestSummary(results, "corrupt")).run_id);
    const summaryText = await Deno.readTextFile(join(runDir, "summary.json"));

    await Deno.writeTextFile(join(runDir, "summary.json"), '{"schema_version": 1}\n');
    const shape = await runCli(["report", runDir]);
    assert.equal(shape.code, 3, shape.stderr);
    assert.match(shape.stderr, /summary\.json: "comparisons" is not a list/);
    assert.ok(!shape.stderr.includes("    at "), "no stack trace");

    await Deno.writeTextFile(join(runDir, "summary.json"), summaryText.slice(0, 50));
    const broken = await runCli(["report", runDir]);
    assert.equal(broken.code, 3);
    assert.match(broken.stderr, /summary\.json is not valid JSON/);

    await Deno.writeTextFile(join(runDir, "summary.json"), summaryText);
    await Deno.writeTextFile(join(runDir, "experiment.resolved.yaml"), "name: edited\n");
    const edited = await runCli(["report", runDir]);
    assert.equal(edited.code, 3);
    assert.match(edited.stderr, /experiment\.resolved\.yaml changed since the run/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
