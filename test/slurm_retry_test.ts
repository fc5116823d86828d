/**
 * Node failure as flaky infrastructure, with fake Slurm clients (test/programs/fake_slurm/) so it
 * runs on any machine: the first job ends NODE_FAIL, the retry policy runs the phase again
 * without any log match, and the second job completes.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  denoCommand,
  latestSummary,
  PROJECT,
  runCli,
  writeExperiment,
} from "./_testing/cli_harness.ts";

Deno.test("slurm (fake clients): NODE_FAIL is retried as flaky infrastructure", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const state = join(dir, "fake_slurm");
    await Deno.mkdir(state);
    const file = await writeExperiment(dir, "exp.yaml", {
      name: "fake-slurm",
      schedule: { steps: 8, save_at: 4 },
      executor: { kind: "slurm", poll: 0.1 },
      trainer: {
        command: denoCommand("echo_trainer.ts", "fake-slurm"),
        timeout: 60,
        retry: { attempts: 2, on: ["no log line matches this"] },
      },
      resume: { native: { from: "native" } },
    });
    const run = await runCli(["run", file, "--results", join(dir, "results"), "--quiet"], {
      PATH: `${join(PROJECT, "test/programs/fake_slurm")}:${Deno.env.get("PATH")}`,
      FAKE_SLURM_DIR: state,
      FAKE_SLURM_NODE_FAIL: "1",
    });
    assert.equal(run.code, 0, run.stderr);
    const summary = await latestSummary(join(dir, "results"), "fake-slurm");
    assert.equal(summary.verdict, "PASS");
    const retried = summary.phases.filter((p) => (p.attempts ?? 1) > 1);
    assert.equal(retried.length, 1);
    assert.equal(retried[0].retries![0].matched, "Slurm NODE_FAIL");
    assert.match(retried[0].retries![0].message, /Slurm job 1 NODE_FAIL on fake1/);
    assert.equal(Number(await Deno.readTextFile(join(state, "counter"))), 4); // 3 phases + 1 retry
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("slurm (fake clients): without a retry policy NODE_FAIL fails the phase", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const state = join(dir, "fake_slurm");
    await Deno.mkdir(state);
    const file = await writeExperiment(dir, "exp.yaml", {
      name: "fake-slurm-noretry",
      schedule: { steps: 8, save_at: 4 },
      executor: { kind: "slurm", poll: 0.1, max_jobs: 1 },
      trainer: { command: denoCommand("echo_trainer.ts", "fake-slurm"), timeout: 60 },
      resume: { native: { from: "native" } },
    });
    const run = await runCli(["run", file, "--results", join(dir, "results"), "--quiet"], {
      PATH: `${join(PROJECT, "test/programs/fake_slurm")}:${Deno.env.get("PATH")}`,
      FAKE_SLURM_DIR: state,
      FAKE_SLURM_NODE_FAIL: "1",
    });
    assert.equal(run.code, 3, run.stderr);
    const summary = await latestSummary(join(dir, "results"), "fake-slurm-noretry");
    const failed = summary.phases.find((p) => p.status === "failed")!;
    assert.match(failed.message!, /Slurm job 1 NODE_FAIL/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
