/**
 * The detection matrix (docs/reference-trainer.md): the quickstart with each reference-trainer fault must FAIL with
 * the documented comparison, first divergent step, state component and diagnostic; the clean
 * quickstart and a reshard-only experiment must PASS (no false alarms); a trainer adding tiny
 * noise to every loss must ABSTAIN. Every run is a real `run-experiment` process.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import type { RunSummary } from "../src/types/summary.ts";
import { DETECTION_MATRIX } from "./detection_matrix.ts";
import { latestSummary, PROJECT, runCli, writeExperiment } from "./_testing/cli_harness.ts";

const QUICKSTART = join(PROJECT, "experiments/quickstart.yaml");

function describe(summary: RunSummary): string {
  const failing = summary.comparisons
    .filter((c) => c.verdict !== "PASS")
    .map((c) => `${c.name}:${c.verdict}@${c.first_divergent_step}`);
  const states = summary.state_checks.map((s) =>
    `${s.phase}:${s.verdict}[${s.differing.join(",")}]`
  );
  return `${summary.verdict} comparisons=${failing.join(" ")} states=${
    states.join(" ")
  } diagnostics=${summary.diagnostics.map((d) => d.code).join(",")}`;
}

const results = await Deno.makeTempDir({ prefix: "detection-" });
globalThis.addEventListener("unload", () => Deno.removeSync(results, { recursive: true }));

/** One quickstart run in its own results folder with `--set` overrides, and its summary. */
async function runQuickstart(folder: string, sets: string[]) {
  const dir = join(results, folder);
  const run = await runCli([
    "run",
    QUICKSTART,
    "--results",
    dir,
    "--quiet",
    ...sets.flatMap((s) => ["--set", s]),
  ]);
  const summary = await latestSummary(dir, "quickstart");
  return { run, summary, why: `${describe(summary)}\n${run.stderr.slice(-2000)}` };
}

Deno.test("detection matrix: the clean quickstart passes every comparison", async () => {
  const { run, summary, why } = await runQuickstart("clean", []);
  assert.equal(run.code, 0, why);
  assert.equal(summary.verdict, "PASS");
  assert.ok(
    summary.comparisons.length >= 6 && summary.comparisons.every((c) => c.verdict === "PASS"),
  );
  assert.ok(summary.state_checks.every((s) => s.verdict === "PASS"));
  assert.ok(summary.plan_sync.length === 3 && summary.plan_sync.every((p) => p.verified));
  // The plan path lands on the same bits as the universal reshard.
  for (const policy of ["first_holder", "local_first_least_loaded", "balanced"]) {
    const c = summary.comparisons.find((x) =>
      x.a === "resume-reshard" && x.b === `resume-plan-${policy}`
    );
    assert.ok(c, `resume-reshard~resume-plan-${policy} compared`);
    assert.equal(c.lane, "exact");
    assert.equal(c.verdict, "PASS");
    assert.equal(c.max_ulp, 0);
  }
});

for (const row of DETECTION_MATRIX) {
  Deno.test(`detection matrix: ${row.fault} fails ${row.comparison} at step ${row.step}`, async () => {
    const { run, summary, why } = await runQuickstart(row.fault, [
      `trainer.args.fault=${row.fault}`,
    ]);
    assert.equal(run.code, 1, why);
    assert.equal(summary.verdict, "FAIL", why);
    const comparison = summary.comparisons.find((c) =>
      c.name === row.comparison && c.metric === "loss"
    );
    assert.ok(comparison, `${row.comparison} is reported: ${why}`);
    assert.equal(comparison.verdict, "FAIL", why);
    assert.equal(comparison.first_divergent_step, row.step, why);
    if (row.step > 21) assert.equal(comparison.last_matching_step, row.step - 1, why);
    if (row.state) {
      const check = summary.state_checks.find((s) => s.phase === row.statePhase)!;
      assert.equal(check.verdict, "FAIL", why);
      assert.ok(check.differing.includes(row.state), why);
      if (row.tensor) assert.ok(check.differing_tensors?.includes(row.tensor), why);
    } else {
      assert.ok(
        summary.state_checks.every((s) => s.verdict !== "FAIL"),
        `no state check fails: ${why}`,
      );
    }
    if (row.diagnostic) assert.ok(summary.diagnostics.some((d) => d.code === row.diagnostic), why);
    if (row.cause) {
      const codes = (summary.findings ?? []).map((f) => f.code);
      assert.ok(codes.includes(row.cause), `card ${codes.join(", ")}: ${why}`);
    }
    if (row.failedPhase) {
      assert.equal(summary.phases.find((p) => p.name === row.failedPhase)!.status, "failed", why);
    }
  });
}

Deno.test("detection matrix: a state difference no loss shows still fails, card cause-state-only", async () => {
  // One resumed step: expert-moment-one-param's wrong moments first move the loss at N+2, so
  // only the restore checks can tell, and the card must name the tensor.
  const { run, summary, why } = await runQuickstart("state-only", [
    "trainer.args.fault=expert-moment-one-param",
    "schedule.steps=21",
  ]);
  assert.equal(run.code, 1, why);
  assert.equal(summary.verdict, "FAIL", why);
  assert.ok(summary.comparisons.every((c) => c.verdict !== "FAIL"), why);
  const reshard = summary.state_checks.find((s) => s.phase === "resume-reshard")!;
  assert.deepEqual(reshard.differing_tensors, [
    "layers.0.experts.w2 · expert 1 · exp_avg",
    "layers.0.experts.w2 · expert 1 · exp_avg_sq",
  ]);
  const card = (summary.findings ?? []).find((f) => f.code === "cause-state-only");
  assert.ok(card, `card ${(summary.findings ?? []).map((f) => f.code)}: ${why}`);
  assert.match(card.title, /layers\.0\.experts\.w2 · expert 1 · exp_avg/);
  assert.ok(card.phases?.includes("resume-reshard"), why);
});

Deno.test("detection matrix: a reshard-only experiment passes", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = await writeExperiment(dir, "reshard.yaml", {
      name: "reshard-only",
      schedule: { steps: 30, save_at: 12 },
      trainer: {
        preset: "reference",
        args: { world_size: 4, ep_size: 4, zero_stage: 3, precision: "bf16", grad_accum: 2 },
      },
      resume: {
        to_two: { from: "universal", args: { world_size: 2, ep_size: 1, zero_stage: 1 } },
        to_eight: { from: "universal", args: { world_size: 8, ep_size: 2 } },
      },
    });
    const run = await runCli(["run", file, "--results", join(dir, "results"), "--quiet"]);
    const summary = await latestSummary(join(dir, "results"), "reshard-only");
    assert.equal(run.code, 0, describe(summary));
    assert.ok(summary.comparisons.every((c) => c.verdict === "PASS" && c.lane === "drift"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("detection matrix: a trainer with tiny random loss noise ends in ABSTAIN", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = await writeExperiment(dir, "noisy.yaml", {
      name: "noisy",
      schedule: { steps: 20, save_at: 10 },
      trainer: {
        command: [
          Deno.execPath(),
          "run",
          "-A",
          "--quiet",
          join(PROJECT, "test/trainers/noisy_trainer.ts"),
        ],
      },
      resume: { native: { from: "native" } },
      noise_floor: { repeats: 2 },
    });
    const run = await runCli(["run", file, "--results", join(dir, "results"), "--quiet"]);
    const summary = await latestSummary(join(dir, "results"), "noisy");
    assert.equal(run.code, 4, describe(summary));
    assert.equal(summary.verdict, "ABSTAIN");
    assert.equal(summary.noise_floor.identical, false);
    assert.ok(summary.comparisons.some((c) => c.lane === "exact" && c.verdict === "ABSTAIN"));
    // The companion lanes at the derived rtol judge the noise as noise.
    assert.ok(summary.comparisons.some((c) => c.lane === "tolerance" && c.verdict === "PASS"));
    assert.ok(summary.comparisons.every((c) => c.verdict !== "FAIL"), describe(summary));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
