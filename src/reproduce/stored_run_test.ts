import assert from "node:assert/strict";
import { join } from "node:path";
import { stringify } from "yaml";
import { resolvePlan, validateExperiment } from "../experiment/mod.ts";
import { PLAN_FILE, RUN_FOLDER } from "../types/phase_spec.ts";
import { readStoredPlan, readStoredRun, StoredRunError } from "./stored_run.ts";

Deno.test("readStoredRun: a matrix member's resolved experiment replays under its full name", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const validated = validateExperiment({
      name: "m",
      schedule: { steps: 4, save_at: 2 },
      trainer: { command: ["t", "${steps}"], args: { lr: 1 } },
      matrix: { "trainer.args.lr": [1, 2] },
    });
    assert.ok(validated.ok);
    const exp = validated.experiments[1];
    const runDir = join(dir, "results", "m[lr=2]", "20261130T000000Z-000abc");
    await Deno.mkdir(runDir, { recursive: true });
    await Deno.writeTextFile(join(runDir, "experiment.resolved.yaml"), stringify(exp));
    await Deno.writeTextFile(
      join(runDir, "manifest.json"),
      JSON.stringify({ experiment_file: "/exp/m.yaml", children: [] }),
    );
    const stored = await readStoredRun(runDir);
    assert.equal(stored.experiment.name, "m[lr=2]");
    assert.equal(stored.experiment.trainer.args?.lr, 2);
    assert.equal(stored.baseDir, "/exp");
    assert.equal(stored.resultsDir, await Deno.realPath(join(dir, "results")));
    await assert.rejects(readStoredRun(join(dir, "nope")), StoredRunError);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("readStoredPlan: plan.json placed in the run folder; an older folder without it resolves once", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const validated = validateExperiment({
      name: "p",
      schedule: { steps: 4, save_at: 2 },
      trainer: { command: ["t", "${metrics_file}", "${checkpoint_dir}"] },
      resume: { native: { from: "native" } },
    });
    assert.ok(validated.ok);
    const exp = validated.experiments[0];
    const ctx = { baseDir: "/exp", harnessEnv: {} };
    // A run folder as the runner leaves it: plan.json relative to it, wherever it was moved.
    const runDir = join(dir, "results", "p", "20261130T000000Z-000abc");
    await Deno.mkdir(runDir, { recursive: true });
    const relative = resolvePlan(exp, ctx);
    assert.equal(relative.runDir, RUN_FOLDER);
    await Deno.writeTextFile(join(runDir, PLAN_FILE), JSON.stringify(relative));
    const stored = { runDir, experiment: exp, baseDir: "/exp" };
    const placed = await readStoredPlan(stored, {});
    assert.deepEqual(placed, resolvePlan(exp, { ...ctx, runDir }));
    assert.equal(placed.phases[0].paths.dir, join(runDir, "phases", "baseline"));
    assert.ok(!JSON.stringify(placed).includes(RUN_FOLDER));
    // A run folder from before plan.json: the stored experiment, resolved once for it.
    await Deno.remove(join(runDir, PLAN_FILE));
    assert.deepEqual(await readStoredPlan(stored, {}), placed);
    // A damaged plan.json is a bad run folder (exit 2), not a crash.
    await Deno.writeTextFile(join(runDir, PLAN_FILE), "{");
    await assert.rejects(readStoredPlan(stored, {}), StoredRunError);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
