/**
 * The detection matrix under `schedule.split: fused` and the device pool (issue 37): every fault
 * of the reference trainer is still caught (`FUSED_DETECTION_MATRIX`: the same comparison and
 * step, the save checks read on the baseline, a perturbation check where the save moved the run);
 * and rows of the separate matrix keep their verdict under a device pool and when a second
 * experiment of the results folder shares every phase. Every run is a real `run` process.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import type { RunSummary } from "../src/types/summary.ts";
import {
  DETECTION_MATRIX,
  FUSED_DETECTION_MATRIX,
  type FusedDetection,
} from "./detection_matrix.ts";
import { latestSummary, PROJECT, runCli } from "./_testing/cli_harness.ts";

const QUICKSTART = join(PROJECT, "experiments/quickstart.yaml");
/** Four CPU ids: the quickstart's phases take 4 ranks; independent phases share them in turn. */
const POOL = "devices={kind: cpu, ids: [0, 1, 2, 3]}";

function describe(summary: RunSummary): string {
  const failing = summary.comparisons
    .filter((c) => c.verdict !== "PASS")
    .map((c) => `${c.name}:${c.verdict}@${c.first_divergent_step}`);
  const states = summary.state_checks.map((s) =>
    `${s.phase}${s.check ? `(${s.check})` : ""}:${s.verdict}[${s.differing.join(",")}]`
  );
  return `${summary.verdict} comparisons=${failing.join(" ")} states=${states.join(" ")} ` +
    `cards=${(summary.findings ?? []).map((f) => f.code).join(",")}`;
}

const results = await Deno.makeTempDir({ prefix: "detection-fused-" });
globalThis.addEventListener("unload", () => Deno.removeSync(results, { recursive: true }));

async function runQuickstart(folder: string, name: string, sets: string[]) {
  const dir = join(results, folder);
  const run = await runCli(
    ["run", QUICKSTART, "--results", dir, "--quiet", ...sets.flatMap((s) => ["--set", s])],
  );
  const summary = await latestSummary(dir, name);
  return { run, summary, why: `${describe(summary)}\n${run.stderr.slice(-2000)}` };
}

/** The row's verdict, comparison, state checks, diagnostic, card and failed phase. */
function assertDetected(summary: RunSummary, row: FusedDetection, why: string) {
  assert.equal(summary.verdict, "FAIL", why);
  const comparison = summary.comparisons.find((c) =>
    c.name === row.comparison && c.metric === "loss"
  );
  assert.ok(comparison, `${row.comparison} is reported: ${why}`);
  if (row.lossCatches) {
    assert.equal(comparison.verdict, "FAIL", why);
    assert.equal(comparison.first_divergent_step, row.step, why);
  } else {
    assert.ok(summary.comparisons.every((c) => c.verdict === "PASS"), `no loss shows it: ${why}`);
  }
  if (row.state) {
    const check = summary.state_checks.find((s) =>
      s.phase === row.statePhase && s.check !== "perturb"
    )!;
    assert.equal(check.verdict, "FAIL", why);
    assert.ok(check.differing.includes(row.state), why);
    if (row.tensor) assert.ok(check.differing_tensors?.includes(row.tensor), why);
  }
  const perturb = summary.state_checks.find((s) => s.check === "perturb");
  if (row.perturbs) {
    assert.equal(perturb?.verdict, "FAIL", why);
    assert.ok(perturb.differing.includes(row.perturbs), why);
  } else if (perturb) {
    assert.equal(perturb.verdict, "PASS", `the save moved nothing: ${why}`);
  }
  if (row.diagnostic) assert.ok(summary.diagnostics.some((d) => d.code === row.diagnostic), why);
  if (row.cause) {
    const codes = (summary.findings ?? []).map((f) => f.code);
    assert.ok(codes.includes(row.cause), `card ${codes.join(", ")}: ${why}`);
  }
  if (row.failedPhase) {
    assert.equal(summary.phases.find((p) => p.name === row.failedPhase)!.status, "failed", why);
  }
}

Deno.test("fused split: the clean quickstart passes, with no split phase and a perturbation check", async () => {
  const { run, summary, why } = await runQuickstart("clean", "quickstart", [
    "schedule.split=fused",
    POOL,
  ]);
  assert.equal(run.code, 0, why);
  assert.equal(summary.verdict, "PASS");
  assert.ok(!summary.phases.some((p) => p.role === "split"), why);
  assert.deepEqual(
    summary.state_checks.filter((s) => s.phase === "baseline").map((s) => [s.check, s.verdict]),
    [["perturb", "PASS"], ["save", "PASS"]],
  );
  assert.ok(summary.phases.every((p) => p.devices?.kind === "cpu"), why);
  assert.deepEqual(summary.bill?.fused, {
    phases: 1,
    step_equivalents: 20,
    device_seconds: summary.bill!.fused!.device_seconds,
  });
  assert.ok(summary.bill!.fused!.device_seconds! > 0, why);
});

for (const row of FUSED_DETECTION_MATRIX) {
  Deno.test(`fused split: ${row.fault} is caught`, async () => {
    const { run, summary, why } = await runQuickstart(row.fault, "quickstart", [
      "schedule.split=fused",
      POOL,
      `trainer.args.fault=${row.fault}`,
    ]);
    assert.equal(run.code, 1, why);
    assertDetected(summary, row, why);
  });
}

// Two rows of the separate matrix (a load fault and a save fault) under the device pool, then
// again as another experiment of the same results folder, which shares every phase.
for (const fault of ["skip-rng-restore", "save-perturbs-rng"]) {
  Deno.test(`device pool and sharing: ${fault} keeps its verdict`, async () => {
    const row = DETECTION_MATRIX.find((r) => r.fault === fault)!;
    const expected: FusedDetection = { ...row, lossCatches: true };
    const sets = [POOL, `trainer.args.fault=${fault}`];
    const first = await runQuickstart(`shared-${fault}`, "quickstart", sets);
    assert.equal(first.run.code, 1, first.why);
    assertDetected(first.summary, expected, first.why);
    const again = await runQuickstart(`shared-${fault}`, "quickstart-again", [
      ...sets,
      "name=quickstart-again",
    ]);
    assert.equal(again.run.code, 1, again.why);
    assert.ok(again.summary.phases.every((p) => p.shared_from === "quickstart"), again.why);
    assertDetected(again.summary, expected, again.why);
    assert.equal(describe(again.summary), describe(first.summary));
  });
}
