/**
 * The Slurm executor against the real test cluster (`tools/slurm_cluster.sh start`: nodes in
 * network namespaces): the quickstart across nodes gives the same verdict and bit-identical losses
 * as local children; a failing job, a job over its time limit, SIGINT to the harness (no job left
 * in the queue) and re-attaching to jobs after the harness was killed with SIGKILL. Ignored on a
 * machine without a cluster; never under CI (see test/_testing/slurm_cluster.ts).
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { latestSummary, PROJECT, runCli, writeExperiment } from "./_testing/cli_harness.ts";
import {
  assertSlurmReachable,
  echoExperiment,
  IN_CI,
  jobState,
  queuedJobs,
  readJson,
  SLURM,
  SLURM_IGNORE,
  startHarness,
  submittedJob,
  waitFor,
} from "./_testing/slurm_cluster.ts";

Deno.test({
  name: "slurm: the test cluster is reachable under CI",
  ignore: !IN_CI && !SLURM.ok,
  fn: assertSlurmReachable,
});

Deno.test({
  name: "slurm: the quickstart across nodes PASSes with losses bit-identical to local children",
  ignore: SLURM_IGNORE,
  async fn() {
    assertSlurmReachable();
    const dir = await Deno.makeTempDir();
    try {
      const file = join(PROJECT, "experiments/quickstart.yaml");
      const [local, slurm] = await Promise.all([
        runCli(["run", file, "--results", join(dir, "local"), "--quiet"]),
        runCli(
          [
            "run",
            file,
            "--results",
            join(dir, "slurm"),
            "--quiet",
            "--set",
            // The test cluster puts each job on its least loaded node (LLN): phases that run at
            // once land on different nodes.
            `executor={kind: slurm, poll: 0.5}`,
          ],
          SLURM.env,
        ),
      ]);
      assert.equal(local.code, 0, local.stderr);
      assert.equal(slurm.code, 0, slurm.stderr);
      const read = (r: string) => Deno.readTextFile(join(dir, r, "quickstart/latest/losses.csv"));
      const losses = await read("slurm");
      assert.ok(losses.split("\n").length > 40);
      assert.equal(losses, await read("local"));
      const summary = await latestSummary(join(dir, "slurm"), "quickstart");
      assert.equal(summary.verdict, "PASS");
      const manifest = await readJson(join(dir, "slurm/quickstart/latest/manifest.json"));
      const clusters = manifest.clusters as Record<string, Record<string, string>>;
      assert.deepEqual(Object.keys(clusters).sort(), summary.phases.map((p) => p.name).sort());
      assert.match(clusters.baseline.scheduler, /22|23|24|25|slurm/);
      assert.equal(clusters.baseline.state, "COMPLETED");
      assert.ok(clusters.baseline.nodes.length > 0);
      const hosts = new Set(Object.values(clusters).map((c) => c.nodes));
      assert.ok(hosts.size >= 2, `every phase ran on one node: ${[...hosts]}`);
      const phase = await readJson(join(dir, "slurm/quickstart/latest/phases/baseline/phase.json"));
      assert.equal((phase.slurm as Record<string, string>).id, clusters.baseline.job_id);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "slurm: a failing job fails its phase with Slurm's state, exit code and log tail",
  ignore: SLURM_IGNORE,
  async fn() {
    assertSlurmReachable();
    const dir = await Deno.makeTempDir();
    try {
      const file = await writeExperiment(
        dir,
        "exp.yaml",
        // Under srun, as a launcher preset runs: the exit code still comes through.
        echoExperiment(
          "slurm-fail",
          { FAIL_PHASE: "split", API_TOKEN: "hunter2-secret" },
          120,
          { kind: "slurm", poll: 0.5, srun: true },
        ),
      );
      const run = await runCli(["run", file, "--results", dir, "--quiet"], SLURM.env);
      assert.equal(run.code, 3, run.stderr);
      const summary = await latestSummary(dir, "slurm-fail");
      const split = summary.phases.find((p) => p.name === "split")!;
      assert.equal(split.status, "failed");
      assert.equal(split.exit_code, 1);
      assert.match(split.message!, /Slurm job \d+ FAILED .*exit code 1/);
      assert.match(split.log_tail!, /failing phase split on purpose/);
      assert.equal(summary.phases.find((p) => p.name === "baseline")!.status, "ok");
      const script = await Deno.readTextFile(
        join(dir, "slurm-fail/latest/phases/baseline/slurm_job.sh"),
      );
      assert.match(script, /export FAIL_PHASE='split'/);
      assert.match(script, /^srun --kill-on-bad-exit=1 --ntasks-per-node=1 '/m);
      assert.ok(!script.includes("hunter2"), "a secret-looking variable is not written to disk");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "slurm: a job over its timeout is cancelled and its phase times out",
  ignore: SLURM_IGNORE,
  async fn() {
    assertSlurmReachable();
    const dir = await Deno.makeTempDir();
    try {
      const slow = join(dir, "slow");
      await Deno.writeTextFile(slow, "");
      const file = await writeExperiment(
        dir,
        "exp.yaml",
        echoExperiment("slurm-timeout", { SLOW_FLAG: slow, SLOW_PHASE: "baseline" }, 3),
      );
      const run = await runCli(["run", file, "--results", dir, "--quiet"], SLURM.env);
      assert.equal(run.code, 3, run.stderr);
      const summary = await latestSummary(dir, "slurm-timeout");
      const baseline = summary.phases.find((p) => p.name === "baseline")!;
      assert.equal(baseline.status, "timeout");
      assert.match(baseline.message!, /timed out after 3 s of running: Slurm job (\d+) cancelled/);
      const id = baseline.message!.match(/Slurm job (\d+)/)![1];
      assert.ok(!(await queuedJobs()).includes(id), `job ${id} left in squeue`);
      assert.match(await jobState(id), /^(CANCELLED|)$/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "slurm: SIGINT to the harness cancels every job it submitted",
  ignore: SLURM_IGNORE,
  async fn() {
    assertSlurmReachable();
    const dir = await Deno.makeTempDir();
    try {
      const slow = join(dir, "slow");
      await Deno.writeTextFile(slow, "");
      const file = await writeExperiment(
        dir,
        "exp.yaml",
        echoExperiment("slurm-sigint", { SLOW_FLAG: slow, SLOW_PHASE: "baseline" }),
      );
      const harness = startHarness(file, dir);
      const baseline = await submittedJob(dir, "slurm-sigint", "baseline");
      await waitFor(async () => (await jobState(baseline)) === "RUNNING", "the job to run");
      harness.kill("SIGINT");
      const { code, stderr } = await harness.output();
      assert.notEqual(code, 0);
      const queued = await queuedJobs();
      assert.ok(!queued.includes(baseline), `job ${baseline} left in squeue: ${queued}`);
      assert.match(await jobState(baseline), /^(CANCELLED|)$/);
      const summary = await latestSummary(dir, "slurm-sigint");
      assert.ok(summary.interrupted, new TextDecoder().decode(stderr));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "slurm: a harness forced to exit (third SIGINT) still cancels its jobs on the way out",
  ignore: SLURM_IGNORE,
  async fn() {
    assertSlurmReachable();
    const dir = await Deno.makeTempDir();
    try {
      const slow = join(dir, "slow");
      await Deno.writeTextFile(slow, "");
      const file = await writeExperiment(
        dir,
        "exp.yaml",
        echoExperiment("slurm-force-exit", { SLOW_FLAG: slow, SLOW_PHASE: "baseline" }),
      );
      const harness = startHarness(file, dir);
      const baseline = await submittedJob(dir, "slurm-force-exit", "baseline");
      await waitFor(async () => (await jobState(baseline)) === "RUNNING", "the job to run");
      for (let i = 0; i < 3; i++) harness.kill("SIGINT"); // the third one exits at once
      await harness.output();
      await waitFor(
        async () => !(await queuedJobs()).includes(baseline),
        `job ${baseline} to leave the queue`,
        15_000,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "slurm: after a SIGKILL of the harness the next run attaches to its jobs",
  ignore: SLURM_IGNORE,
  async fn() {
    assertSlurmReachable();
    const dir = await Deno.makeTempDir();
    try {
      const file = await writeExperiment(
        dir,
        "exp.yaml",
        echoExperiment("slurm-attach", { SLEEP_MS: "5000" }),
      );
      const harness = startHarness(file, dir);
      const baseline = await submittedJob(dir, "slurm-attach", "baseline");
      await waitFor(async () => (await jobState(baseline)) === "RUNNING", "the job to run");
      harness.kill("SIGKILL");
      await harness.output();
      assert.equal(await jobState(baseline), "RUNNING", "the job outlives its harness");

      const rerun = await runCli(["run", file, "--results", dir], SLURM.env);
      assert.equal(rerun.code, 0, rerun.stderr);
      assert.match(rerun.stdout + rerun.stderr, new RegExp(`attaching to Slurm job ${baseline}`));
      const summary = await latestSummary(dir, "slurm-attach");
      assert.equal(summary.verdict, "PASS");
      const phase = summary.phases.find((p) => p.name === "baseline")!;
      assert.equal(phase.cached, true, "completed in the killed run's folder, not resubmitted");
      const manifest = await readJson(join(dir, "slurm-attach/latest/manifest.json"));
      const clusters = manifest.clusters as Record<string, Record<string, string>>;
      assert.equal(clusters.baseline.job_id, baseline);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "slurm: a job left by a killed harness is cancelled once the experiment changed",
  ignore: SLURM_IGNORE,
  async fn() {
    assertSlurmReachable();
    const dir = await Deno.makeTempDir();
    try {
      const slow = join(dir, "slow");
      await Deno.writeTextFile(slow, "");
      const file = await writeExperiment(
        dir,
        "exp.yaml",
        echoExperiment("slurm-stale", { SLOW_FLAG: slow, SLOW_PHASE: "baseline" }),
      );
      const harness = startHarness(file, dir);
      const baseline = await submittedJob(dir, "slurm-stale", "baseline");
      const killedRun = (await Array.fromAsync(Deno.readDir(join(dir, "slurm-stale"))))
        .find((e) => /^\d{8}T/.test(e.name))!;
      const phases = join(dir, "slurm-stale", killedRun.name, "phases");
      await waitFor(
        async () =>
          (await Deno.readTextFile(join(phases, "baseline/slurm.err")).catch(() => ""))
            .includes("slow on purpose"),
        "the job to hang",
      );
      harness.kill("SIGKILL");
      await harness.output();
      await Deno.remove(slow);

      const rerun = await runCli(
        ["run", file, "--results", dir, "--set", "schedule.steps=10"],
        SLURM.env,
      );
      assert.equal(rerun.code, 0, rerun.stderr);
      assert.match(rerun.stderr + rerun.stdout, /cancelled Slurm job \d+ .*its inputs changed/);
      assert.ok(!(await queuedJobs()).includes(baseline), `job ${baseline} left in squeue`);
      assert.ok((await Deno.stat(join(phases, "baseline.incomplete"))).isDirectory);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
