/**
 * What a PASS is worth (docs/parity.md, "Sensitivity"): a resume's calibration phases repeat it
 * with a known LR error, and the summary, report.md, junit.xml and the console say which error
 * its lane would have caught. Every run is a real `parity run` of the reference trainer.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { latestSummary, PROJECT, runExperiment, writeExperiment } from "./_testing/cli_harness.ts";

/** The quickstart's model, 30 steps saved at 10, with a calibrated native resume and reshard. */
function calibrated(name: string, reshard: Record<string, unknown> = {}) {
  return {
    name,
    seed: 1234,
    schedule: { steps: 30, save_at: 10 },
    trainer: {
      preset: "reference",
      args: { world_size: 4, ep_size: 2, zero_stage: 2, precision: "bf16", grad_accum: 2 },
    },
    resume: {
      native: { from: "native", sensitivity: { lr_error: [1e-4] } },
      reshard: {
        from: "universal",
        args: { world_size: 2, ep_size: 2 },
        sensitivity: { lr_error: [1e-6, 1e-2] },
        ...reshard,
      },
    },
  };
}

Deno.test("sensitivity: calibration resumes say which LR error each lane would have caught", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sensitivity-" });
  try {
    const file = await writeExperiment(dir, "calibrated.yaml", calibrated("calibrated"));
    const results = join(dir, "results");
    const run = await runExperiment(file, results);
    assert.equal(run.code, 0, run.stdout + run.stderr);
    const summary = await latestSummary(results, "calibrated");
    // Calibrations are phases of their own and never become verdicts of the run.
    const phases = summary.phases.filter((p) => p.role === "calibrate").map((p) => p.name);
    assert.deepEqual(phases, [
      "calibrate-native-lr1e-4",
      "calibrate-reshard-lr1e-6",
      "calibrate-reshard-lr1e-2",
    ]);
    assert.ok(summary.comparisons.every((c) => !c.b.startsWith("calibrate-")));
    const native = summary.comparisons.find((c) => c.name === "baseline~resume-native")!;
    assert.equal(native.verdict, "PASS");
    assert.equal(native.sensitivity?.detects, 1e-4);
    assert.equal(native.sensitivity?.tried[0].first_divergent_step, 12);
    assert.equal(native.sensitivity?.tried[0].applied, true);
    const reshard = summary.comparisons.find((c) => c.name === "baseline~resume-reshard")!;
    assert.equal(reshard.lane, "drift");
    assert.equal(reshard.verdict, "PASS");
    // 1e-2 is far above any drift; 1e-6 is below the early window's 16 ULPs at this size.
    const [small, large] = reshard.sensitivity!.tried;
    assert.equal(large.verdict, "FAIL");
    assert.equal(large.test, "early");
    assert.equal(small.verdict, "PASS", JSON.stringify(small));
    assert.equal(reshard.sensitivity?.detects, 1e-2);
    assert.equal(reshard.sensitivity?.missed, 1e-6);
    assert.match(reshard.sensitivity!.statement, /^would have caught an LR error of 1 % or more/);
    assert.match(reshard.sensitivity!.statement, /an error of 0\.0001 % passed/);

    const runDir = join(results, "calibrated", "latest");
    const report = await Deno.readTextFile(join(runDir, "report.md"));
    assert.match(report, /### What a PASS is worth/);
    assert.match(report, /baseline\\~resume-reshard.*≥ 1 %/);
    const junit = await Deno.readTextFile(join(runDir, "junit.xml"));
    assert.match(junit, /<property name="sensitivity_lr_error" value="0\.01"\/>/);
    assert.match(run.stdout, /baseline~resume-reshard PASS \(drift\): would have caught/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sensitivity: a calibration the trainer ignores is reported and not counted", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sensitivity-" });
  try {
    // A command trainer that reads the contract from PARITY_*; the resume's own env wins over
    // the contract's, so its calibrations never see the LR scale.
    const experiment = {
      name: "ignored",
      schedule: { steps: 20, save_at: 10 },
      trainer: {
        command: [Deno.execPath(), "run", "-A", join(PROJECT, "reference_trainer/cli.ts"), "train"],
      },
      resume: {
        native: {
          from: "native",
          env: { PARITY_LR_SCALE: "" },
          sensitivity: { lr_error: [1e-3, 1e-2] },
        },
      },
    };
    const file = await writeExperiment(dir, "ignored.yaml", experiment);
    const results = join(dir, "results");
    const run = await runExperiment(file, results);
    assert.equal(run.code, 0, run.stdout + run.stderr);
    const summary = await latestSummary(results, "ignored");
    const native = summary.comparisons.find((c) => c.name === "baseline~resume-native")!;
    assert.deepEqual(native.sensitivity?.tried.map((t) => [t.verdict, t.applied]), [
      ["PASS", false],
      ["PASS", false],
    ]);
    assert.equal(native.sensitivity?.detects, null);
    assert.match(native.sensitivity!.statement, /no calibration took effect/);
    const flagged = summary.diagnostics.filter((d) => d.code === "calibration-not-applied");
    assert.deepEqual(flagged.map((d) => d.phase), [
      "calibrate-native-lr1e-3",
      "calibrate-native-lr1e-2",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
