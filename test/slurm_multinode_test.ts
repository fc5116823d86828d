/**
 * Failures on the multi-node test cluster (`tools/slurm_cluster.sh start`: nodes in network
 * namespaces): a node that dies mid-phase, a job requeued mid-phase, a node that loses its
 * network, and the harness SIGKILLed while jobs run on two nodes. Every job runs in partition
 * `faults` (node3, node4), so killing its nodes never touches other tests' jobs (partition
 * `debug`). Ignored on a machine without the cluster; never under CI.
 */

import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { latestSummary, runCli, writeExperiment } from "./_testing/cli_harness.ts";
import {
  assertSlurmReachable,
  clusterTool,
  echoExperiment,
  FAULTS_PARTITION,
  IN_CI,
  jobNodes,
  jobState,
  partitionNodes,
  readJson,
  SLURM,
  SLURM_IGNORE,
  slurmOutput,
  startHarness,
  submittedJob,
  waitFor,
} from "./_testing/slurm_cluster.ts";

const FAULTS = { kind: "slurm", poll: 0.5, partition: FAULTS_PARTITION };

// Another cluster (SLURM_CONF set by hand) has no partition whose nodes a test may kill: these
// tests are then ignored, saying why; under CI they run and fail instead.
const FAULT_NODES = SLURM.ok ? await partitionNodes(FAULTS_PARTITION) : [];
const IGNORE = SLURM_IGNORE || (!IN_CI && FAULT_NODES.length < 2);
if (IGNORE && !SLURM_IGNORE) {
  console.log(`multi-node Slurm tests ignored: no partition ${FAULTS_PARTITION} with 2 nodes up`);
}

/** Both nodes of the faults partition are up (a failed test may have left one down). */
async function assertFaultNodes(): Promise<void> {
  assertSlurmReachable();
  const up = await partitionNodes(FAULTS_PARTITION);
  assert.equal(up.length, 2, `partition ${FAULTS_PARTITION} needs 2 nodes up, has ${up}`);
}

/** The harness's output as text once it exits. */
async function outputOf(harness: Deno.ChildProcess) {
  const out = await harness.output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  return { code: out.code, text };
}

/** Starts a slow baseline (echo trainer waiting on a flag file) and waits until it runs. */
async function slowBaseline(
  dir: string,
  name: string,
  executor: Record<string, unknown> = FAULTS,
  retry?: object,
) {
  const slow = join(dir, "slow");
  await Deno.writeTextFile(slow, "");
  const file = await writeExperiment(
    dir,
    "exp.yaml",
    echoExperiment(
      name,
      { SLOW_FLAG: slow, SLOW_PHASE: "baseline" },
      300,
      executor,
      retry ? { retry } : {},
    ),
  );
  const harness = startHarness(file, dir);
  const job = await submittedJob(dir, name, "baseline");
  await waitFor(async () => (await jobState(job)) === "RUNNING", "the baseline job to run");
  // The echo trainer prints this once it is asleep: the phase is mid-run.
  const phases = join(
    dir,
    name,
    (await Array.fromAsync(Deno.readDir(join(dir, name))))
      .find((e) => /^\d{8}T/.test(e.name))!.name,
    "phases",
  );
  await waitFor(
    async () =>
      (await Deno.readTextFile(join(phases, "baseline/slurm.err")).catch(() => ""))
        .includes("slow on purpose"),
    "the baseline to be mid-run",
  );
  return { file, harness, job, node: await jobNodes(job), slow, phases };
}

Deno.test({
  name: "slurm (nodes): a node that dies mid-phase: the job is requeued onto the other node, PASS",
  ignore: IGNORE,
  async fn() {
    await assertFaultNodes();
    const dir = await Deno.makeTempDir();
    let killed = "";
    try {
      const run = await slowBaseline(dir, "node-dies");
      killed = run.node;
      // The node dies: slurmd, the job's step daemon and the trainer, all at once.
      await clusterTool(["kill-node", killed]);
      await Deno.remove(run.slow); // the restarted attempt runs straight through
      const { code, text } = await outputOf(run.harness);
      assert.equal(code, 0, text);
      assert.match(text, new RegExp(`Slurm job ${run.job} requeued after running on ${killed}`));
      assert.match(text, new RegExp(`${killed} DOWN\\S*: Not responding`));
      const summary = await latestSummary(dir, "node-dies");
      assert.equal(summary.verdict, "PASS");
      const phase = await readJson(join(run.phases, "baseline/phase.json"));
      const slurm = phase.slurm as { id: string; nodes: string; restarts: number; state: string };
      assert.equal(slurm.id, run.job, "followed under the same job id, not submitted again");
      assert.equal(slurm.restarts, 1);
      assert.equal(slurm.state, "COMPLETED");
      assert.notEqual(slurm.nodes, killed, "the second attempt ran on the other node");
      // What completed is reused: a second run submits nothing.
      const again = await runCli(["run", run.file, "--results", dir, "--quiet"], SLURM.env);
      assert.equal(again.code, 0, again.stderr);
      const reused = await latestSummary(dir, "node-dies");
      assert.ok(reused.phases.every((p) => p.cached), "every phase reused");
    } finally {
      if (killed) await clusterTool(["start-node", killed]);
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "slurm (nodes): a job requeued mid-phase is followed to its end",
  ignore: IGNORE,
  async fn() {
    await assertFaultNodes();
    const dir = await Deno.makeTempDir();
    try {
      const run = await slowBaseline(dir, "requeued");
      const requeue = await new Deno.Command("scontrol", {
        args: ["requeue", run.job],
        env: SLURM.env,
        stderr: "piped",
      }).output();
      assert.ok(requeue.success, new TextDecoder().decode(requeue.stderr));
      await Deno.remove(run.slow);
      const { code, text } = await outputOf(run.harness);
      assert.equal(code, 0, text);
      assert.match(text, new RegExp(`Slurm job ${run.job} requeued .*restart 1`));
      const summary = await latestSummary(dir, "requeued");
      assert.equal(summary.verdict, "PASS");
      const phase = await readJson(join(run.phases, "baseline/phase.json"));
      const slurm = phase.slurm as { id: string; restarts: number; state: string };
      assert.deepEqual([slurm.id, slurm.restarts, slurm.state], [run.job, 1, "COMPLETED"]);
      // The first attempt's output stays in the logs (append mode), then the second one's.
      const err = await Deno.readTextFile(join(run.phases, "baseline/stderr.log"));
      assert.equal(err.split("slow on purpose").length - 1, 1);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "slurm (nodes): a node that loses its network: NODE_FAIL with Slurm's reason, retried",
  ignore: IGNORE,
  async fn() {
    await assertFaultNodes();
    const dir = await Deno.makeTempDir();
    let cut = "";
    try {
      // --no-requeue: Slurm ends the job NODE_FAIL instead of requeueing it, and the harness's
      // retry policy runs the phase again as a new job.
      const run = await slowBaseline(
        dir,
        "net-down",
        { ...FAULTS, extra_args: ["--no-requeue"] },
        { attempts: 2, on: ["no log line matches this"] },
      );
      cut = run.node;
      await clusterTool(["net-down", cut]);
      await waitFor(
        async () => (await jobState(run.job)) === "NODE_FAIL",
        "Slurm to declare the job NODE_FAIL",
        120_000,
      );
      // The cut-off node still runs the first attempt: it dies before the network comes back,
      // as a fenced node would, so it cannot write into the phase folder later.
      await clusterTool(["kill-node", cut]);
      await Deno.remove(run.slow);
      const { code, text } = await outputOf(run.harness);
      assert.equal(code, 0, text);
      const summary = await latestSummary(dir, "net-down");
      assert.equal(summary.verdict, "PASS");
      const baseline = summary.phases.find((p) => p.name === "baseline")!;
      assert.equal(baseline.attempts, 2);
      const failure = baseline.retries![0];
      assert.equal(failure.matched, "Slurm NODE_FAIL");
      assert.match(
        failure.message,
        new RegExp(`Slurm job ${run.job} NODE_FAIL .*on ${cut}.*; ${cut} DOWN\\S*: Not responding`),
      );
      const phase = await readJson(join(run.phases, "baseline/phase.json"));
      assert.notEqual((phase.slurm as { nodes: string }).nodes, cut);
    } finally {
      if (cut) {
        await clusterTool(["net-up", cut]);
        await clusterTool(["start-node", cut]);
      }
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "slurm (nodes): SIGKILL of the harness while jobs run on two nodes; the next run attaches",
  ignore: IGNORE,
  async fn() {
    await assertFaultNodes();
    const dir = await Deno.makeTempDir();
    try {
      const file = await writeExperiment(
        dir,
        "exp.yaml",
        // A whole node per job: baseline and split run at once, one on each node.
        echoExperiment("attach-two", { SLEEP_MS: "6000" }, 120, {
          ...FAULTS,
          extra_args: ["--exclusive"],
        }),
      );
      const harness = startHarness(file, dir);
      const jobs = [
        await submittedJob(dir, "attach-two", "baseline"),
        await submittedJob(dir, "attach-two", "split"),
      ];
      await waitFor(
        async () => (await Promise.all(jobs.map(jobState))).every((s) => s === "RUNNING"),
        "both jobs to run",
      );
      const nodes = await Promise.all(jobs.map(jobNodes));
      assert.notEqual(nodes[0], nodes[1], "one job on each node");
      harness.kill("SIGKILL");
      await harness.output();
      assert.deepEqual(await Promise.all(jobs.map(jobState)), ["RUNNING", "RUNNING"]);

      const rerun = await runCli(["run", file, "--results", dir], SLURM.env);
      assert.equal(rerun.code, 0, rerun.stderr);
      for (const job of jobs) {
        assert.match(rerun.stdout + rerun.stderr, new RegExp(`attaching to Slurm job ${job}\\b`));
      }
      const summary = await latestSummary(dir, "attach-two");
      assert.equal(summary.verdict, "PASS");
      for (const name of ["baseline", "split"]) {
        const phase = summary.phases.find((p) => p.name === name)!;
        assert.equal(phase.cached, true, `${name} completed in the killed run's folder`);
      }
      const queued = await slurmOutput(["squeue", "-h", "-o", "%i"]);
      for (const job of jobs) assert.ok(!queued.split("\n").includes(job));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "slurm (nodes): the cluster's daemons listen only inside its namespaces, with no way out",
  ignore: IGNORE,
  async fn() {
    await assertFaultNodes();
    const conf = await Deno.readTextFile(SLURM.env.SLURM_CONF);
    const ports = [...conf.matchAll(/^Slurm(?:ctld|d)Port=(\d+)/gm)].map((m) => m[1]);
    assert.equal(ports.length, 2);
    const text = async (cmd: string, args: string[]) =>
      new TextDecoder().decode(
        (await new Deno.Command(cmd, { args, stdout: "piped" }).output()).stdout,
      );
    // This (root) namespace is the login node: no Slurm daemon listens in it.
    const listening = await text("ss", ["-Hltn"]);
    for (const port of ports) {
      assert.ok(!listening.includes(`:${port} `), `port ${port} is open here`);
    }
    const nodes = (await slurmOutput(["sinfo", "-h", "-N", "-o", "%N"])).split("\n")
      .map((l) => l.trim()).filter((l) => l.length > 0);
    assert.ok(new Set(nodes).size >= 4);
    for (const netns of ["parity-ctl", ...new Set(nodes).values().map((n) => `parity-${n}`)]) {
      const routes = await text("ip", ["-n", netns, "route"]);
      assert.ok(routes.trim().length > 0, `${netns} has no routes`);
      assert.ok(!/^default/m.test(routes), `${netns} has a default route: ${routes}`);
    }
  },
});

Deno.test({
  name: "slurm (nodes): start is idempotent: a second start keeps every daemon it started",
  ignore: IGNORE,
  async fn() {
    await assertFaultNodes();
    const run = join(dirname(SLURM.env.SLURM_CONF), "run");
    const pids = async () => {
      const out: Record<string, string> = {};
      for await (const e of Deno.readDir(run)) {
        if (e.name.endsWith(".pid")) {
          out[e.name] = (await Deno.readTextFile(join(run, e.name))).trim();
        }
      }
      return out;
    };
    const before = await pids();
    assert.ok(
      Object.keys(before).length >= 6,
      `munged, slurmctld and 4 slurmd: ${Object.keys(before)}`,
    );
    await clusterTool(["start"]);
    await clusterTool(["status"]);
    assert.deepEqual(await pids(), before);
  },
});
