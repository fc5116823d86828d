/**
 * Several saves in one split (`schedule.save_at: [3, 6]`) and a resume from a save that is not the
 * last (`resume.<name>.from_step`), end to end on the reference trainer: a correct resume from
 * step 3 PASSes; a resume pointed at the checkpoint root (which follows `latest`, step 6) is caught
 * and named ("loaded the state saved at step 6"); a tag the experiment did not ask for is a warning.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  denoCommand,
  latestSummary,
  PROJECT,
  runExperiment,
  writeExperiment,
} from "./_testing/cli_harness.ts";

const REFERENCE = [
  Deno.execPath(),
  "run",
  "-A",
  join(PROJECT, "reference_trainer/cli.ts"),
  "train",
];

Deno.test("several saves: a resume from step 3 of [3, 6] PASSes, compared from step 4", async () => {
  const dir = await Deno.makeTempDir({ prefix: "several-saves-" });
  try {
    const file = await writeExperiment(dir, "saves.yaml", {
      name: "saves",
      schedule: { steps: 10, save_at: [3, 6] },
      trainer: { preset: "reference", args: { world_size: 2, ep_size: 1 } },
      resume: { early: { from: "native", from_step: 3 }, last: { from: "native" } },
    });
    const results = join(dir, "results");
    const run = await runExperiment(file, results);
    assert.equal(run.code, 0, run.stdout + run.stderr);
    const summary = await latestSummary(results, "saves");
    assert.equal(summary.verdict, "PASS");
    assert.equal(summary.save_at, 6);
    assert.deepEqual(summary.save_steps, [3, 6]);
    const early = summary.comparisons.find((c) => c.name === "baseline~resume-early")!;
    assert.deepEqual([early.verdict, early.first_step, early.last_step], ["PASS", 4, 10]);
    const last = summary.comparisons.find((c) => c.name === "baseline~resume-last")!;
    assert.deepEqual([last.verdict, last.first_step], ["PASS", 7]);
    const check = summary.state_checks.find((s) => s.phase === "resume-early")!;
    assert.deepEqual([check.verdict, check.from_step], ["PASS", 3]);
    const root = join(results, "saves", "latest", "phases", "split", "checkpoints");
    for (const tag of ["global_step3", "global_step6"]) {
      assert.ok((await Deno.stat(join(root, tag))).isDirectory, `${tag} saved`);
    }
    assert.ok(!summary.diagnostics.some((d) => d.code === "checkpoint-tags-not-requested"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("several saves: a resume pointed at the wrong tag 'loaded the state saved at step 6'", async () => {
  const dir = await Deno.makeTempDir({ prefix: "several-saves-" });
  try {
    // A command trainer whose resume is pointed at the checkpoint root, not its tag: the
    // reference trainer follows `latest` (step 6) though the resume is to start from step 3.
    const file = await writeExperiment(dir, "wrong.yaml", {
      name: "wrong-tag",
      schedule: { steps: 10, save_at: [3, 6] },
      trainer: { command: REFERENCE, checkpoint_marker: "checkpoint_complete.json", timeout: 300 },
      resume: {
        early: { from: "native", from_step: 3, env: { PARITY_RESUME_FROM: "${checkpoint_dir}" } },
      },
    });
    const results = join(dir, "results");
    const run = await runExperiment(file, results);
    assert.equal(run.code, 1, run.stdout + run.stderr);
    const summary = await latestSummary(results, "wrong-tag");
    assert.equal(summary.verdict, "FAIL");
    const check = summary.state_checks.find((s) => s.phase === "resume-early")!;
    assert.equal(check.verdict, "FAIL");
    assert.equal(check.from_step, 3);
    assert.equal(check.loaded_save?.step, 6);
    assert.equal(check.loaded_save?.all, true);
    const said = "loaded the state saved at step 6, not step 3's";
    const card = summary.findings?.find((f) => f.title.includes(said));
    assert.ok(card, JSON.stringify(summary.findings, null, 1));
    const runDir = join(results, "wrong-tag", "latest");
    assert.ok((await Deno.readTextFile(join(runDir, "report.md"))).includes(said));
    assert.ok((await Deno.readTextFile(join(runDir, "junit.xml"))).includes(said));
    assert.ok((run.stdout + run.stderr).includes(said), run.stdout + run.stderr);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("several saves: a tag the experiment did not ask for is a warning", async () => {
  const dir = await Deno.makeTempDir({ prefix: "several-saves-" });
  try {
    const file = await writeExperiment(dir, "extra.yaml", {
      name: "extra-tag",
      schedule: { steps: 6, save_at: 4 },
      trainer: {
        command: denoCommand("echo_trainer.ts", "extra-tag-marker"),
        timeout: 120,
        env: { EXTRA_SAVE_AT: "2" },
      },
      resume: { native: { from: "native" } },
    });
    const results = join(dir, "results");
    const run = await runExperiment(file, results);
    assert.equal(run.code, 0, run.stdout + run.stderr);
    const summary = await latestSummary(results, "extra-tag");
    const warning = summary.diagnostics.find((d) => d.code === "checkpoint-tags-not-requested");
    assert.equal(warning?.level, "warning");
    assert.equal(warning?.phase, "split");
    assert.match(warning?.message ?? "", /holds global_step2, which the experiment did not ask/);
    const report = await Deno.readTextFile(join(results, "extra-tag", "latest", "report.md"));
    assert.match(report, /checkpoint-tags-not-requested \| split \| .*global\\_step2, which/);
    assert.match(run.stdout + run.stderr, /global_step2, which the experiment did not ask/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
