/**
 * `parity rerun`: the quickstart reproduces bit for bit; a run whose trainer code or an
 * environment variable changed is DRIFTED, with the first differing step and the difference
 * named.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import type { RerunResult } from "../src/reproduce/rerun.ts";
import { fixtureTrainer, PROJECT, runCli, writeExperiment } from "./_testing/cli_harness.ts";

async function rerunJson(stdout: string): Promise<RerunResult> {
  const folder = /new run: (\S+) \(rerun\.json\)/.exec(stdout)?.[1];
  assert.ok(folder, stdout);
  return JSON.parse(
    await Deno.readTextFile(join(folder.startsWith("/") ? "" : PROJECT, folder, "rerun.json")),
  );
}

Deno.test("rerun: the quickstart reproduces bit for bit", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const results = join(dir, "results");
    const quickstart = join(PROJECT, "experiments/quickstart.yaml");
    const run = await runCli(["run", quickstart, "--results", results, "--quiet"]);
    assert.equal(run.code, 0, run.stderr);
    const rerun = await runCli(["rerun", join(results, "quickstart", "latest"), "--quiet"]);
    assert.equal(rerun.code, 0, rerun.stdout + rerun.stderr);
    assert.match(rerun.stdout, /: REPRODUCED/);
    const result = await rerunJson(rerun.stdout);
    assert.equal(result.verdict, "REPRODUCED");
    assert.ok(result.phases.length >= 8);
    assert.ok(result.phases.every((p) => p.outcome === "identical"), JSON.stringify(result.phases));
    // Nothing was taken from the cache: every phase of the rerun ran.
    const summary = JSON.parse(await Deno.readTextFile(join(result.rerun_run, "summary.json")));
    assert.ok(summary.phases.every((p: { cached: boolean }) => !p.cached));
    assert.deepEqual(result.environment, []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("rerun and golden save read plan.json, and a folder from before it still works", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const results = join(dir, "results");
    const quickstart = join(PROJECT, "experiments/quickstart.yaml");
    const run = await runCli(["run", quickstart, "--results", results, "--quiet"]);
    assert.equal(run.code, 0, run.stderr);
    const latest = join(results, "quickstart", "latest");
    // The plan as run, its run-folder paths relative: no absolute path of the results folder.
    const plan = await Deno.readTextFile(join(latest, "plan.json"));
    assert.ok(plan.includes("<run>/phases/baseline") && !plan.includes(results), plan);
    // A run folder of an older harness has no plan.json: resolved once from its experiment.
    await Deno.remove(join(latest, "plan.json"));
    const goldens = join(dir, "goldens");
    const saved = await runCli(["golden", "save", latest, "--goldens", goldens]);
    assert.equal(saved.code, 0, saved.stdout + saved.stderr);
    assert.match(saved.stdout, /saved golden .*\.jsonl/);
    const rerun = await runCli(["rerun", latest, "--quiet"]);
    assert.equal(rerun.code, 0, rerun.stdout + rerun.stderr);
    const result = await rerunJson(rerun.stdout);
    assert.equal(result.verdict, "REPRODUCED");
    assert.ok(result.phases.every((p) => p.outcome === "identical"), JSON.stringify(result.phases));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("rerun: a changed environment variable or trainer code is DRIFTED and named", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const trainer = join(dir, "trainer.ts");
    await Deno.copyFile(fixtureTrainer("rng_trainer.ts"), trainer);
    const file = await writeExperiment(dir, "drift.yaml", {
      name: "drift",
      schedule: { steps: 6, save_at: 3 },
      trainer: {
        command: [Deno.execPath(), "run", "-A", "--quiet", trainer],
        env: { LR: "${env.PARITY_TEST_LR}" },
        code_inputs: [trainer],
        timeout: 60,
      },
      resume: { native: { from: "native" } },
    });
    const results = join(dir, "results");
    const run = await runCli(["run", file, "--results", results, "--quiet"], {
      PARITY_TEST_LR: "0.01",
    });
    assert.equal(run.code, 0, run.stderr);
    const source = await Deno.realPath(join(results, "drift", "latest"));

    const byEnv = await runCli(["rerun", source, "--quiet"], { PARITY_TEST_LR: "0.02" });
    assert.equal(byEnv.code, 1, byEnv.stdout + byEnv.stderr);
    assert.match(byEnv.stdout, /: DRIFTED/);
    assert.match(byEnv.stdout, /children\.baseline\.env\.LR: 0\.01 → 0\.02/);
    const envResult = await rerunJson(byEnv.stdout);
    const baseline = envResult.phases.find((p) => p.phase === "baseline")!;
    assert.equal(baseline.outcome, "differs");
    assert.equal(baseline.first_differing_step, 1);
    const fields = envResult.environment.map((d) => d.field);
    assert.ok(fields.includes("variables.PARITY_TEST_LR"), fields.join(", "));
    assert.ok(!fields.some((f) => f.startsWith("code.")), fields.join(", "));

    // The trainer's update changes from step 5 on: only steps >= 5 differ.
    const code = await Deno.readTextFile(trainer);
    await Deno.writeTextFile(
      trainer,
      code.replace("w -= lr * (w - x);", "w -= (step >= 5 ? 2 * lr : lr) * (w - x);"),
    );
    const byCode = await runCli(["rerun", source, "--quiet"], { PARITY_TEST_LR: "0.01" });
    assert.equal(byCode.code, 1, byCode.stdout + byCode.stderr);
    const codeResult = await rerunJson(byCode.stdout);
    const steps = Object.fromEntries(
      codeResult.phases.map((p) => [p.phase, p.first_differing_step]),
    );
    assert.deepEqual(steps, { baseline: 5, split: null, "resume-native": 5 });
    assert.ok(codeResult.environment.some((d) => d.field === "code.trainer.digest"));
    assert.match(byCode.stdout, /code\.trainer\.digest: [0-9a-f]{64} → [0-9a-f]{64}/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("rerun: a folder that is not a run exits 2", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const rerun = await runCli(["rerun", dir]);
    assert.equal(rerun.code, 2);
    assert.match(rerun.stderr, /experiment\.resolved\.yaml: missing/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
