/**
 * The subtle-fault rows of the detection matrix (docs/reference-trainer.md): a clean 2000-step reshard must PASS
 * the drift lane although its loss drifts ~10^5 ULPs from the baseline, and each subtle fault
 * must FAIL it at the documented step. The rows share one results folder, so the baseline,
 * split and convert run once and every fault row re-runs only the resume (the fault is a
 * per-resume argument: no topology, so the lane stays drift, and the cache keys stay equal).
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { SUBTLE_DETECTIONS } from "./detection_matrix.ts";
import { latestSummary, PROJECT, runCli } from "./_testing/cli_harness.ts";

const RESHARD_LONG = join(PROJECT, "experiments/reference/reshard_long.yaml");
const results = await Deno.makeTempDir({ prefix: "detection-long-" });
globalThis.addEventListener("unload", () => Deno.removeSync(results, { recursive: true }));

Deno.test("detection matrix (2000 steps): a clean reshard drifts but passes the drift lane", async () => {
  const run = await runCli(["run", RESHARD_LONG, "--results", results, "--quiet"]);
  const summary = await latestSummary(results, "reshard-long");
  const c = summary.comparisons.find((x) => x.name === "baseline~resume-reshard")!;
  assert.equal(run.code, 0, `${c?.reason}\n${run.stderr.slice(-2000)}`);
  assert.equal(c.lane, "drift");
  assert.match(c.lane_reason ?? "", /topology differs .*world_size 4 → 2/);
  assert.equal(c.verdict, "PASS");
  // The drift a fixed rtol 1e-4 used to fail on is there: far beyond ULPs, below the envelope.
  assert.ok((c.max_rel ?? 0) > 1e-4, `max_rel ${c.max_rel}`);
  assert.ok(c.drift!.early_max_ulp32 <= c.drift!.early_limit_ulp32);
  assert.ok(c.drift!.max_envelope_ratio < 1);
  assert.equal(c.drift!.bias_blocks, 10);
});

for (const row of SUBTLE_DETECTIONS) {
  Deno.test(`detection matrix (2000 steps): ${row.fault} fails ${row.comparison} at step ${row.step}`, async () => {
    const run = await runCli([
      "run",
      RESHARD_LONG,
      "--results",
      results,
      "--quiet",
      "--set",
      `resume.reshard.args.fault=${row.fault}`,
    ]);
    const summary = await latestSummary(results, "reshard-long");
    const c = summary.comparisons.find((x) => x.name === row.comparison && x.metric === "loss")!;
    const why = `${c?.reason}\n${run.stderr.slice(-2000)}`;
    assert.equal(run.code, 1, why);
    assert.equal(summary.verdict, "FAIL", why);
    assert.equal(c.lane, "drift", "a fault is no topology: the lane does not move");
    assert.equal(c.verdict, "FAIL", why);
    assert.equal(c.first_divergent_step, row.step, why);
    // Only the resume re-ran: the fault acts on load, so the other cache keys are unchanged.
    for (const p of summary.phases.filter((p) => p.name !== "resume-reshard")) {
      assert.equal(p.cached, true, `${p.name} reused`);
    }
    if (row.cause) {
      const codes = (summary.findings ?? []).map((f) => f.code);
      assert.ok(codes.includes(row.cause), `card ${codes.join(", ")}: ${why}`);
    }
    const check = summary.state_checks.find((s) => s.phase === "resume-reshard")!;
    if (row.state) {
      assert.equal(check.verdict, "FAIL", why);
      assert.ok(check.differing.includes(row.state), why);
      if (row.tensor) assert.ok(check.differing_tensors?.includes(row.tensor), why);
    } else {
      assert.equal(check.verdict, "PASS", "every digest matches: only the loss can tell");
    }
  });
}
