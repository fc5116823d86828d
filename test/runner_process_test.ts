/**
 * End-to-end runner behaviour with real processes: a trainer that crashes, one that hangs past
 * its timeout, and a harness stopped by a signal each end with the right phase status, exit
 * code 3, the log tail in the report, and nothing left in the process table.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { findProcesses, uniqueMarker, waitForNoProcesses } from "./_testing/proc_table.ts";
import {
  CLI,
  denoCommand,
  fixtureTrainer,
  latestSummary,
  PROJECT,
  runCli,
  writeExperiment,
} from "./_testing/cli_harness.ts";

function commandExperiment(name: string, command: string[], extra: Record<string, unknown> = {}) {
  return {
    name,
    schedule: { steps: 6, save_at: 3 },
    trainer: { command, timeout: 60, ...extra },
    resume: { native: { from: "native" } },
  };
}

Deno.test("run: a trainer that exits 1 is a failed phase, exit 3, log tail in the report", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = await writeExperiment(
      dir,
      "crash.yaml",
      commandExperiment("crash", denoCommand("fail_trainer.ts"), {
        env: { HF_API_TOKEN: "hunter2-secret", WANDB_MODE: "offline" },
      }),
    );
    const results = join(dir, "results");
    const run = await runCli(["run", file, "--results", results, "--quiet"]);
    assert.equal(run.code, 3, run.stderr);
    const summary = await latestSummary(results, "crash");
    assert.equal(summary.verdict, "ERROR");
    const baseline = summary.phases.find((p) => p.name === "baseline")!;
    assert.equal(baseline.status, "failed");
    assert.equal(baseline.exit_code, 1);
    assert.match(baseline.message!, /exited with code 1/);
    assert.match(baseline.log_tail!, /boom: CUDA out of memory/);
    assert.ok(
      summary.phases.filter((p) => p.name !== "baseline").every((p) => p.status === "skipped"),
    );
    const report = await Deno.readTextFile(join(results, "crash", "latest", "report.md"));
    assert.match(report, /boom: CUDA out of memory/);
    // The manifest records every child's argv and environment, secrets redacted.
    const manifestText = await Deno.readTextFile(join(results, "crash", "latest", "manifest.json"));
    assert.ok(!manifestText.includes("hunter2-secret"), "no secret value in the manifest");
    const manifest = JSON.parse(manifestText);
    assert.equal(manifest.children[0].env.HF_API_TOKEN, "<redacted>");
    assert.equal(manifest.children[0].env.WANDB_MODE, "offline");
    assert.equal(manifest.children[0].env.PARITY_PHASE, "baseline");
    assert.ok(manifest.children[0].argv.includes(fixtureTrainer("fail_trainer.ts")));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

for (const keepGoing of [false, true]) {
  Deno.test(`run: a failed baseline ${keepGoing ? "with" : "without"} --keep-going`, async () => {
    const dir = await Deno.makeTempDir();
    try {
      const exp = commandExperiment("kg", denoCommand("echo_trainer.ts"), {
        env: { FAIL_PHASE: "baseline" },
      });
      const file = await writeExperiment(dir, "kg.yaml", exp);
      const results = join(dir, "results");
      const run = await runCli([
        "run",
        file,
        "--results",
        results,
        "--quiet",
        ...(keepGoing ? ["--keep-going"] : []),
      ]);
      assert.equal(run.code, 3, run.stderr);
      const summary = await latestSummary(results, "kg");
      const statuses = summary.phases.map((p) => `${p.name}:${p.status}`);
      if (keepGoing) {
        // Only what depends on the failure stops; the independent phases run and are compared.
        assert.deepEqual(statuses, ["baseline:failed", "split:ok", "resume-native:ok"]);
        const check = summary.state_checks.find((c) => c.phase === "resume-native")!;
        assert.equal(check.available, false, "the fixture emits no digests");
      } else {
        assert.deepEqual(statuses, ["baseline:failed", "split:skipped", "resume-native:skipped"]);
        assert.match(summary.phases[1].message!, /--keep-going/);
      }
      assert.equal(summary.verdict, "ERROR");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("run: a trainer hanging past its timeout is killed with its grandchildren", async () => {
  const dir = await Deno.makeTempDir();
  const marker = uniqueMarker("hang");
  try {
    const exp = commandExperiment("hang", denoCommand("hang_trainer.ts", marker), { timeout: 1.5 });
    const file = await writeExperiment(dir, "hang.yaml", exp);
    const results = join(dir, "results");
    const run = await runCli(["run", file, "--results", results, "--quiet"]);
    assert.equal(run.code, 3, run.stderr);
    const summary = await latestSummary(results, "hang");
    const baseline = summary.phases.find((p) => p.name === "baseline")!;
    assert.equal(baseline.status, "timeout");
    assert.match(baseline.message!, /timed out/);
    assert.match(baseline.log_tail!, /hanging with marker/);
    assert.deepEqual(await findProcesses(marker), [], "no grandchild survives the timeout");
  } finally {
    await waitForNoProcesses(marker, 3000).catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  Deno.test(`run: ${signal} to the harness stops every child and records the run as interrupted`, async () => {
    const dir = await Deno.makeTempDir();
    const marker = uniqueMarker("sig");
    try {
      const file = await writeExperiment(
        dir,
        "sig.yaml",
        commandExperiment("sig", denoCommand("hang_trainer.ts", marker), { timeout: 600 }),
      );
      const results = join(dir, "results");
      const child = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--quiet", CLI, "run", file, "--results", results, "--quiet"],
        cwd: PROJECT,
        stdout: "null",
        stderr: "piped",
      }).spawn();
      // Wait until the trainer's grandchild exists, then signal the harness only.
      for (let i = 0; i < 100 && (await findProcesses(marker)).length === 0; i++) {
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok((await findProcesses(marker)).length > 0, "the hanging trainer started");
      child.kill(signal);
      const status = await child.status;
      await child.stderr.cancel();
      assert.equal(status.code, 3);
      assert.deepEqual(await findProcesses(marker), [], "no process of the phase survives");
      const summary = await latestSummary(results, "sig");
      assert.equal(summary.interrupted, true);
      assert.equal(summary.verdict, "ERROR");
      assert.equal(summary.phases[0].status, "failed");
      assert.match(summary.phases[0].message!, /interrupted/);
    } finally {
      await waitForNoProcesses(marker, 3000).catch(() => {});
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("run: --only runs a phase with what it consumes; an unknown phase is a usage error", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const exp = commandExperiment("only", denoCommand("echo_trainer.ts"));
    const file = await writeExperiment(dir, "only.yaml", exp);
    const results = join(dir, "results");
    const bad = await runCli(["run", file, "--results", results, "--only", "resume-nope"]);
    assert.equal(bad.code, 2);
    assert.match(
      bad.stderr,
      /--only resume-nope: no such phase in only .*its phases: baseline, split/,
    );
    const only = ["run", file, "--results", results, "--quiet", "--only", "resume-native"];
    const run = await runCli(only);
    assert.equal(
      run.code,
      3,
      "without a baseline the comparison cannot be judged: ERROR, not PASS",
    );
    const first = await latestSummary(results, "only");
    assert.deepEqual(first.phases.map((p) => `${p.name}:${p.status}`), [
      "baseline:skipped",
      "split:ok",
      "resume-native:ok",
    ]);
    assert.match(first.phases[0].message!, /not selected/);
    assert.equal(first.comparisons[0].verdict, "ERROR");
    // Once a baseline exists, --only compares against it without running it again.
    assert.equal((await runCli(["run", file, "--results", results, "--quiet"])).code, 0);
    const again = await runCli([...only, "--force", "resume-native"]);
    assert.equal(again.code, 0, again.stderr);
    const second = await latestSummary(results, "only");
    assert.deepEqual(second.phases.map((p) => `${p.name}:${p.cached}`), [
      "baseline:true",
      "split:true",
      "resume-native:false",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("run: parallel: 2 runs independent phases at the same time", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const exp = {
      ...commandExperiment("par", denoCommand("echo_trainer.ts"), { env: { SLEEP_MS: "1000" } }),
      parallel: 2,
    };
    const file = await writeExperiment(dir, "par.yaml", exp);
    const results = join(dir, "results");
    const run = await runCli(["run", file, "--results", results, "--quiet"]);
    assert.equal(run.code, 0, run.stderr);
    const summary = await latestSummary(results, "par");
    const runDir = join(results, "par", summary.run_id);
    const times = async (phase: string) => {
      const p = JSON.parse(await Deno.readTextFile(join(runDir, "phases", phase, "phase.json")));
      return [Date.parse(p.started_at), Date.parse(p.finished_at)];
    };
    const [baselineStart, baselineEnd] = await times("baseline");
    const [splitStart] = await times("split");
    const [resumeStart] = await times("resume-native");
    assert.ok(
      splitStart < baselineEnd && baselineStart < splitStart + 1000,
      "baseline and split overlap",
    );
    const [, splitEnd] = await times("split");
    assert.ok(resumeStart >= splitEnd, "the resume waits for the split it consumes");
    assert.ok(summary.wall_s < summary.children_wall_s, "parallel phases overlap in wall time");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("run: a plan from any planner is verified; a broken one fails the run and names the gap", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const placement = {
      version: 1,
      num_experts: 4,
      ep_size: 2,
      ranks: [{ rank: 0, experts: [0, 3] }, { rank: 1, experts: [1, 2, 3] }],
    };
    const file = await writeExperiment(dir, "plan.yaml", {
      name: "broken-plan",
      schedule: { steps: 8, save_at: 4 },
      trainer: { preset: "reference", args: { world_size: 4, ep_size: 2 } },
      planner: {
        command: denoCommand(
          "broken_planner.ts",
          "${source_checkpoint}",
          "${target}",
          "${policy}",
          "${plan_out}",
        ),
      },
      plan_sync: { target: { world_size: 2, placement }, policies: ["first_holder"] },
    });
    const results = join(dir, "results");
    const run = await runCli(["run", file, "--results", results, "--quiet"]);
    assert.equal(run.code, 1, run.stderr);
    const summary = await latestSummary(results, "broken-plan");
    assert.equal(summary.verdict, "FAIL");
    const plan = summary.plan_sync[0];
    assert.equal(plan.verified, false);
    assert.match(plan.error!, /^parameters\.[^ ]+/, "the verifier names the parameter at fault");
    const phase = summary.phases.find((p) => p.name === "plan-first_holder")!;
    assert.equal(phase.status, "failed");
    assert.match(phase.message!, /plan rejected by the verifier/);
    assert.equal(
      summary.phases.find((p) => p.name === "resume-plan-first_holder")!.status,
      "skipped",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
