/**
 * Real faults under real DeepSpeed (preset `deepspeed`): a rank SIGKILLed in the middle of
 * `save_checkpoint` leaves a split that is never reused — the next run saves again — and one bit
 * flipped in a saved DeepSpeed checkpoint file (its mtime put back) makes the next run re-run the
 * split, naming the file, while phases that never read the damaged file stay cached. Needs
 * `.venv-deepspeed/` like test/deepspeed_experiment_test.ts: fails without it under CI=true, is
 * ignored (saying why) elsewhere. Five DeepSpeed launches in all.
 */

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { latestSummary, PROJECT, runCli, writeExperiment } from "./_testing/cli_harness.ts";
import { flipBitKeepingMtime } from "./_testing/faults.ts";
import { venvGate } from "./_testing/venv_gate.ts";
import type { RunSummary } from "../src/types/summary.ts";

const gate = venvGate(
  "deepspeed fault",
  [join(PROJECT, ".venv-deepspeed")],
  "deno task setup-deepspeed",
);

const cached = (s: RunSummary) => Object.fromEntries(s.phases.map((p) => [p.name, p.cached]));

Deno.test({
  name:
    "deepspeed: a rank SIGKILLed in save_checkpoint is never reused; a flipped bit re-runs the split",
  ignore: gate.ignore,
  async fn() {
    gate.assertVenvs();
    const dir = await Deno.makeTempDir({ prefix: "deepspeed-faults-" });
    try {
      const file = await writeExperiment(dir, "x.yaml", {
        name: "ds-faults",
        seed: 5,
        schedule: { steps: 4, save_at: 2 },
        trainer: {
          preset: "deepspeed",
          args: { world_size: 2, autoep_size: 2, zero_stage: 2, precision: "bf16", grad_accum: 2 },
          timeout: 600,
        },
        resume: { native: { from: "native" } },
      });
      const results = join(dir, "results");
      const run = (extra: string[], env: Record<string, string> = {}) =>
        runCli(["run", file, "--results", results, "--quiet", ...extra], env);

      // 1. Rank 1 dies by SIGKILL after writing its first checkpoint file.
      const killed = await run(["--only", "split"], {
        PYTHONPATH: join(PROJECT, "test/fixtures/kill_rank_in_save"),
        PARITY_TEST_KILL_RANK_IN_SAVE: "1",
      });
      assert.equal(killed.code, 3, killed.stderr.slice(-3000));
      const k = await latestSummary(results, "ds-faults");
      const split = k.phases.find((p) => p.name === "split")!;
      assert.equal(split.status, "failed", JSON.stringify(split));
      const tag = join(results, "ds-faults", k.run_id, "phases/split/checkpoints/global_step2");
      assert.ok(existsSync(tag), "the save had begun");
      assert.ok(!existsSync(join(tag, "parity_checkpoint_complete.json")), "and never completed");

      // 2. The same experiment without the fault: the split saves again, the resume is exact.
      const clean = await run([]);
      assert.equal(clean.code, 0, clean.stderr.slice(-3000));
      const c = await latestSummary(results, "ds-faults");
      assert.equal(cached(c).split, false, "the killed split is never reused");

      // 3. One bit of the largest saved file flipped, its mtime kept: the split runs again.
      const saved = join(results, "ds-faults", c.run_id, "phases/split/checkpoints/global_step2");
      const largest = (await Array.fromAsync(Deno.readDir(saved)))
        .filter((e) => e.isFile)
        .map((e) => ({ name: e.name, size: Deno.statSync(join(saved, e.name)).size }))
        .sort((a, b) => b.size - a.size)[0].name;
      await flipBitKeepingMtime(join(saved, largest));
      const again = await run([]);
      assert.equal(again.code, 0, again.stderr.slice(-3000));
      assert.match(
        again.stderr,
        new RegExp(
          `split: not reusing .*checkpoint file checkpoints/global_step2/${largest} changed`,
        ),
      );
      const a = await latestSummary(results, "ds-faults");
      assert.equal(cached(a).split, false, "the damaged split saved again");
      assert.equal(cached(a)["resume-native"], true, "the resume never read the damaged file");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
