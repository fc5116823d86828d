/**
 * A checkpoint is never reused unverified: one bit flipped in a saved file of the reference
 * trainer's split (with its mtime put back, as silent bit rot would leave it) makes the next run
 * save again, with a note naming the file; the same for the converter's universal folder. `parity
 * report` refuses the damaged run folder first. The DeepSpeed counterpart is in
 * test/deepspeed_faults_test.ts.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { latestSummary, runCli, writeExperiment } from "./_testing/cli_harness.ts";
import { flipBitKeepingMtime } from "./_testing/faults.ts";

Deno.test("reference checkpoint: a flipped bit re-runs the split (and the converter), naming the file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = await writeExperiment(dir, "x.yaml", {
      name: "ckpt-integrity",
      seed: 7,
      schedule: { steps: 6, save_at: 3 },
      trainer: { preset: "reference", timeout: 120, args: { world_size: 2, zero_stage: 2 } },
      resume: { native: { from: "native" }, universal: { from: "universal" } },
    });
    const results = join(dir, "results");
    const first = await runCli(["run", file, "--results", results, "--quiet"]);
    assert.equal(first.code, 0, first.stderr);
    const runDir = join(
      results,
      "ckpt-integrity",
      (await latestSummary(results, "ckpt-integrity")).run_id,
    );
    const shard = "checkpoints/global_step3/zero_pp_rank_1_mp_rank_00_optim_states.safetensors";
    await flipBitKeepingMtime(join(runDir, "phases", "split", shard));

    const report = await runCli(["report", runDir]);
    assert.equal(report.code, 3, report.stderr);
    assert.match(report.stderr, new RegExp(`split: checkpoint file ${shard} changed since`));

    const second = await runCli(["run", file, "--results", results]);
    assert.equal(second.code, 0, second.stderr);
    assert.match(
      second.stderr + second.stdout,
      new RegExp(`split: not reusing the result of run .*: checkpoint file ${shard} changed`),
    );
    let summary = await latestSummary(results, "ckpt-integrity");
    let cached = Object.fromEntries(summary.phases.map((p) => [p.name, p.cached]));
    assert.equal(cached.split, false, "the damaged split saved again");
    assert.equal(cached.baseline, true, "what never read it is still reused");

    const universalDir = join(results, "ckpt-integrity", summary.run_id, "phases", "convert");
    const universalFile = (await Array.fromAsync(
      Deno.readDir(join(universalDir, "global_step3_universal", "zero")),
    )).map((e) => e.name).sort()[0];
    const exp = join(
      universalDir,
      "global_step3_universal",
      "zero",
      universalFile,
      "exp_avg.safetensors",
    );
    await flipBitKeepingMtime(exp);
    const third = await runCli(["run", file, "--results", results]);
    assert.equal(third.code, 0, third.stderr);
    assert.match(
      third.stderr + third.stdout,
      /convert: not reusing .*exp_avg\.safetensors changed since/,
    );
    summary = await latestSummary(results, "ckpt-integrity");
    cached = Object.fromEntries(summary.phases.map((p) => [p.name, p.cached]));
    assert.equal(cached.convert, false, "the damaged universal checkpoint was converted again");
    assert.equal(cached.split, true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
