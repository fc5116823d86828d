/**
 * Resumable, cached, fault-tolerant runs with real processes: a trainer killed with SIGKILL, a
 * trainer crashing half-way through its checkpoint, SIGINT to the harness, and two runs at once
 * on one results folder. Each ends with the right status and nothing left running; the earlier
 * results stay untouched; running the same command again reuses every completed phase and
 * finishes correctly.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { findProcesses, uniqueMarker, waitForNoProcesses } from "./_testing/proc_table.ts";
import type { RunSummary } from "../src/types/summary.ts";
import {
  CLI,
  denoCommand,
  latestSummary,
  PROJECT,
  runCli,
  writeExperiment,
} from "./_testing/cli_harness.ts";

function experiment(marker: string, flags: Record<string, string>) {
  return {
    name: "resumable",
    schedule: { steps: 8, save_at: 4 },
    trainer: { command: denoCommand("echo_trainer.ts", marker), timeout: 120, env: flags },
    resume: { native: { from: "native" }, again: { from: "native", lane: "exact" } },
  };
}

function cachedByPhase(summary: RunSummary): Record<string, boolean> {
  return Object.fromEntries(summary.phases.map((p) => [p.name, p.cached]));
}

async function waitFor(check: () => Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function snapshot(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (d: string) => {
    for await (const e of Deno.readDir(d)) {
      const p = join(d, e.name);
      if (e.isDirectory) await walk(p);
      else if (e.isFile) out.set(p, await Deno.readTextFile(p));
    }
  };
  await walk(dir);
  return out;
}

function startHarness(file: string, results: string, extra: string[] = []) {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", CLI, "run", file, "--results", results, "--quiet", ...extra],
    cwd: PROJECT,
    stdout: "null",
    stderr: "piped",
  }).spawn();
}

/** A harness run whose `phase` hangs while the `slow` flag file exists. */
interface SlowRun {
  /** The experiment file. */
  file: string;
  /** The results folder. */
  results: string;
  /** The flag file; delete it so the phase stops hanging next time. */
  slow: string;
  /** The harness process (stderr piped). */
  harness: Deno.ChildProcess;
}

/** Starts the harness on an experiment whose `phase` hangs, and waits until it does. */
async function startSlowRun(dir: string, marker: string, phase: string): Promise<SlowRun> {
  const slow = join(dir, "slow");
  await Deno.writeTextFile(slow, "");
  const file = await writeExperiment(
    dir,
    "exp.yaml",
    experiment(marker, { SLOW_FLAG: slow, SLOW_PHASE: phase }),
  );
  const results = join(dir, "results");
  const harness = startHarness(file, results);
  await waitFor(
    async () => (await phaseLog(results, phase)).includes("slow on purpose"),
    `${phase} to hang`,
  );
  return { file, results, slow, harness };
}

Deno.test("cache: kill -9 of a trainer mid-phase, then a re-run reuses every completed phase", async () => {
  const dir = await Deno.makeTempDir();
  const marker = uniqueMarker("kill9");
  try {
    // Every phase before the hanging one has completed by the time it hangs.
    const { file, results, slow, harness } = await startSlowRun(dir, marker, "resume-again");
    for (const v of await findProcesses(marker)) Deno.kill(v.pid, "SIGKILL");
    const status = await harness.status;
    await harness.stderr.cancel();
    assert.equal(status.code, 3);
    assert.deepEqual(await waitForNoProcesses(marker, 3000), []);
    const first = await latestSummary(results, "resumable");
    const killed = first.phases.find((p) => p.name === "resume-again")!;
    assert.equal(killed.status, "failed");
    assert.match(killed.message!, /SIGKILL/);
    const before = await snapshot(join(results, "resumable", first.run_id));

    await Deno.remove(slow);
    const rerun = await runCli(["run", file, "--results", results, "--quiet"]);
    assert.equal(rerun.code, 0, rerun.stderr);
    const second = await latestSummary(results, "resumable");
    assert.deepEqual(cachedByPhase(second), {
      baseline: true,
      split: true,
      "resume-native": true,
      "resume-again": false,
    });
    assert.equal(second.verdict, "PASS");
    const after = await snapshot(join(results, "resumable", first.run_id));
    for (const [path, text] of before) assert.equal(after.get(path), text, `${path} is untouched`);
  } finally {
    await waitForNoProcesses(marker, 3000).catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cache: a crash while writing the checkpoint is never reused; the re-run redoes the split", async () => {
  const dir = await Deno.makeTempDir();
  const marker = uniqueMarker("crashsave");
  try {
    const crash = join(dir, "crash");
    await Deno.writeTextFile(crash, "");
    const file = await writeExperiment(
      dir,
      "exp.yaml",
      experiment(marker, { CRASH_SAVE_FLAG: crash }),
    );
    const results = join(dir, "results");
    const first = await runCli(["run", file, "--results", results, "--quiet", "--keep-going"]);
    assert.equal(first.code, 3, first.stderr);
    const s1 = await latestSummary(results, "resumable");
    assert.equal(s1.phases.find((p) => p.name === "split")!.status, "failed");
    assert.equal(s1.phases.find((p) => p.name === "baseline")!.status, "ok");
    assert.deepEqual(await findProcesses(marker), []);

    await Deno.remove(crash);
    const second = await runCli(["run", file, "--results", results, "--quiet"]);
    assert.equal(second.code, 0, second.stderr);
    const s2 = await latestSummary(results, "resumable");
    assert.deepEqual(cachedByPhase(s2), {
      baseline: true,
      split: false,
      "resume-native": false,
      "resume-again": false,
    });
    // Running it once more changes nothing: every phase is reused.
    const third = await runCli(["run", file, "--results", results, "--quiet"]);
    assert.equal(third.code, 0);
    const s3 = await latestSummary(results, "resumable");
    assert.ok(s3.phases.every((p) => p.cached), JSON.stringify(cachedByPhase(s3)));
    assert.deepEqual(
      s3.comparisons.map((c) => [c.name, c.verdict]),
      s2.comparisons.map((c) => [c.name, c.verdict]),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cache: a split without its configured completion marker is a failed phase", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const exp = experiment(uniqueMarker("marker"), {});
    const file = await writeExperiment(dir, "exp.yaml", {
      ...exp,
      trainer: { ...exp.trainer, checkpoint_marker: "SAVE_COMPLETE" },
    });
    const results = join(dir, "results");
    const run = await runCli(["run", file, "--results", results, "--quiet"]);
    assert.equal(run.code, 3, run.stderr);
    const split = (await latestSummary(results, "resumable")).phases.find((p) =>
      p.name === "split"
    )!;
    assert.equal(split.status, "failed");
    assert.match(
      split.message!,
      /incomplete checkpoint: .* has no completion marker SAVE_COMPLETE/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cache: SIGINT during a phase, then the re-run reuses what finished", async () => {
  const dir = await Deno.makeTempDir();
  const marker = uniqueMarker("sigint");
  try {
    // Every phase before the hanging one has completed by the time it hangs.
    const { file, results, slow, harness } = await startSlowRun(dir, marker, "split");
    harness.kill("SIGINT");
    const status = await harness.status;
    await harness.stderr.cancel();
    assert.equal(status.code, 3);
    assert.deepEqual(await waitForNoProcesses(marker, 3000), []);
    const s1 = await latestSummary(results, "resumable");
    assert.equal(s1.interrupted, true);
    assert.equal(s1.phases.find((p) => p.name === "baseline")!.status, "ok");

    await Deno.remove(slow);
    const rerun = await runCli(["run", file, "--results", results, "--quiet"]);
    assert.equal(rerun.code, 0, rerun.stderr);
    const s2 = await latestSummary(results, "resumable");
    assert.equal(s2.phases.find((p) => p.name === "baseline")!.cached, true);
    assert.equal(s2.phases.find((p) => p.name === "split")!.cached, false);
    assert.equal(s2.verdict, "PASS");
  } finally {
    await waitForNoProcesses(marker, 3000).catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cache: after the harness itself is SIGKILLed, the next run reaps its orphans and resumes", async () => {
  const dir = await Deno.makeTempDir();
  const marker = uniqueMarker("harness9");
  try {
    // Every phase before the hanging one has completed by the time it hangs.
    const { file, results, slow, harness } = await startSlowRun(dir, marker, "split");
    harness.kill("SIGKILL");
    await harness.status;
    await harness.stderr.cancel();
    // Nothing could stop the trainer: its process group outlived the harness.
    assert.ok((await findProcesses(marker)).length > 0, "the orphaned trainer is still running");

    await Deno.remove(slow);
    const rerun = await runCli(["run", file, "--results", results, "--quiet"]);
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.deepEqual(await waitForNoProcesses(marker, 3000), [], "the orphan was reaped");
    assert.match(rerun.stderr, /took over the lock of PID \d+/);
    const summary = await latestSummary(results, "resumable");
    assert.equal(summary.phases.find((p) => p.name === "baseline")!.cached, true);
    assert.equal(summary.phases.find((p) => p.name === "split")!.cached, false);
    // Two runs may share a second, so find the killed one by elimination, not by sorting.
    const killedRun = (await Array.fromAsync(Deno.readDir(join(results, "resumable"))))
      .map((e) => e.name).find((n) => /^\d{8}T/.test(n) && n !== summary.run_id)!;
    const moved = await Array.fromAsync(
      Deno.readDir(join(results, "resumable", killedRun, "phases")),
    );
    assert.ok(
      moved.some((e) => e.name === "split.incomplete"),
      "the half-done split was moved aside",
    );
  } finally {
    for (const p of await findProcesses(marker)) Deno.kill(p.pid, "SIGKILL");
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cache: a second run on the same folder is refused, or waits with --wait", async () => {
  const dir = await Deno.makeTempDir();
  const marker = uniqueMarker("lock");
  try {
    const { file, results, slow, harness: holder } = await startSlowRun(dir, marker, "baseline");

    const refused = await runCli(["run", file, "--results", results, "--quiet"]);
    assert.equal(refused.code, 3);
    assert.match(
      refused.stderr,
      /another run holds .*\(PID \d+, started [0-9T:.-]+Z?\); wait for it or pass --wait/,
    );

    const waiter = startHarness(file, results, ["--wait"]);
    await new Promise((r) => setTimeout(r, 500));
    // Let the holder finish: its slow phase ends when the flag goes and the sleep is cut short.
    await Deno.remove(slow);
    for (const v of await findProcesses(marker)) Deno.kill(v.pid, "SIGKILL");
    assert.equal((await holder.status).code, 3, "the holder's killed baseline is an ERROR");
    await holder.stderr.cancel();
    const waited = await waiter.status;
    await waiter.stderr.cancel();
    assert.equal(waited.code, 0, "the waiting run ran after the lock was released");
    const summary = await latestSummary(results, "resumable");
    assert.equal(summary.phases.find((p) => p.name === "baseline")!.cached, false);
    assert.deepEqual(await findProcesses(marker), []);
  } finally {
    await waitForNoProcesses(marker, 3000).catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cache: changing a tolerance re-runs no phase; changing the seed re-runs all", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = await writeExperiment(dir, "exp.yaml", experiment(uniqueMarker("keys"), {}));
    const results = join(dir, "results");
    assert.equal((await runCli(["run", file, "--results", results, "--quiet"])).code, 0);
    const tol = await runCli([
      "run",
      file,
      "--results",
      results,
      "--quiet",
      "--set",
      "tolerance={rtol: 0.5}",
    ]);
    assert.equal(tol.code, 0, tol.stderr);
    assert.ok((await latestSummary(results, "resumable")).phases.every((p) => p.cached));
    const seed = await runCli(["run", file, "--results", results, "--quiet", "--set", "seed=99"]);
    assert.equal(seed.code, 0, seed.stderr);
    assert.ok((await latestSummary(results, "resumable")).phases.every((p) => !p.cached));
    const force = await runCli(["run", file, "--results", results, "--quiet", "--force", "split"]);
    assert.equal(force.code, 0, force.stderr);
    assert.deepEqual(cachedByPhase(await latestSummary(results, "resumable")), {
      baseline: true,
      split: false,
      "resume-native": false,
      "resume-again": false,
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("retry: a phase whose log matches retry.on re-runs, and the retry is reported", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const flaky = join(dir, "flaky");
    await Deno.writeTextFile(flaky, "");
    const exp = experiment(uniqueMarker("retry"), { FLAKY_FLAG: flaky, FLAKY_PHASE: "split" });
    const file = await writeExperiment(dir, "exp.yaml", {
      ...exp,
      trainer: { ...exp.trainer, retry: { attempts: 2, on: ["NCCL error: watchdog"] } },
    });
    const results = join(dir, "results");
    const run = await runCli(["run", file, "--results", results, "--quiet"]);
    assert.equal(run.code, 0, run.stderr);
    const summary = await latestSummary(results, "resumable");
    const split = summary.phases.find((p) => p.name === "split")!;
    assert.equal(split.attempts, 2);
    assert.equal(split.retries![0].matched, "NCCL error: watchdog");
    const runDir = join(results, "resumable", summary.run_id);
    const firstAttempt = await Deno.readTextFile(join(runDir, "phases/split/attempt-1/stderr.log"));
    assert.match(firstAttempt, /watchdog/);
    assert.match(
      await Deno.readTextFile(join(runDir, "report.md")),
      /retried.*NCCL error: watchdog/i,
    );
    // A failure whose log does not match is not retried.
    await Deno.writeTextFile(flaky, "");
    const noMatch = await runCli([
      "run",
      file,
      "--results",
      results,
      "--quiet",
      "--force",
      "--set",
      "trainer.retry.on=[OOM at start-up]",
    ]);
    assert.equal(noMatch.code, 3);
    const s2 = await latestSummary(results, "resumable");
    assert.equal(s2.phases.find((p) => p.name === "split")!.attempts, 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** The stderr log of a phase in the experiment's first run folder ("" until it exists). */
async function phaseLog(results: string, phase: string): Promise<string> {
  const exp = join(results, "resumable");
  try {
    const runs = (await Array.fromAsync(Deno.readDir(exp))).filter((e) => /^\d{8}T/.test(e.name));
    if (runs.length === 0) return "";
    return await Deno.readTextFile(join(exp, runs[0].name, "phases", phase, "stderr.log"));
  } catch {
    return "";
  }
}
