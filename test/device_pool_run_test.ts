/**
 * Issue 37 end to end on the quickstart (reference trainer): a device pool runs independent
 * phases side by side on disjoint devices with losses equal bit for bit to a one-at-a-time run,
 * and a second experiment of the same results folder reuses the first's equal phases (shared,
 * named, checked by their content hashes like any cached phase).
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import type { RunSummary } from "../src/types/summary.ts";
import { latestSummary, PROJECT, runExperiment } from "./_testing/cli_harness.ts";

const QUICKSTART = join(PROJECT, "experiments/quickstart.yaml");
const POOL = "devices={kind: cpu, ids: [0, 1, 2, 3, 4, 5, 6, 7]}";

interface PhaseTimes {
  started_at: string;
  finished_at: string;
}

async function phaseRecord(results: string, experiment: string, phase: string) {
  const path = join(results, experiment, "latest", "phases", phase, "phase.json");
  return JSON.parse(await Deno.readTextFile(path)) as PhaseTimes & { devices?: { ids: number[] } };
}

Deno.test("a device pool runs phases side by side on disjoint devices, losses unchanged; a suite shares equal phases", async () => {
  const root = await Deno.makeTempDir({ prefix: "parity-pool-" });
  try {
    const sequential = join(root, "sequential");
    const pooled = join(root, "pooled");
    const [one, pool] = await Promise.all([
      runExperiment(QUICKSTART, sequential),
      runExperiment(QUICKSTART, pooled, [POOL]),
    ]);
    assert.equal(one.code, 0, one.stderr);
    assert.equal(pool.code, 0, pool.stderr);
    const summary = await latestSummary(pooled, "quickstart");
    // Devices of phases that ran at the same time never overlap.
    const records = await Promise.all(
      summary.phases.map(async (p) => ({ p, r: await phaseRecord(pooled, "quickstart", p.name) })),
    );
    let overlapping = 0;
    for (const a of records) {
      for (const b of records) {
        if (a.p.name >= b.p.name) continue;
        // A plan phase gives its devices back when its child has written the plan; its
        // finished_at comes after the verification that follows (README, plan sync).
        if (a.p.role === "plan" || b.p.role === "plan") continue;
        const together = a.r.started_at < b.r.finished_at && b.r.started_at < a.r.finished_at;
        if (!together) continue;
        overlapping++;
        const shared = a.p.devices!.ids.filter((id) => b.p.devices!.ids.includes(id));
        assert.deepEqual(shared, [], `${a.p.name} and ${b.p.name} ran at once on ${shared}`);
      }
    }
    assert.ok(overlapping > 0, "no two phases ran at once");
    const baseline = summary.phases.find((p) => p.name === "baseline")!;
    assert.equal(baseline.devices!.ids.length, 4); // world_size 4
    const manifest = await Deno.readTextFile(join(pooled, "quickstart", "latest", "manifest.json"));
    assert.match(manifest, /"PARITY_CPUS": "[0-9,]+"/);
    // Bit for bit: the same losses as one phase at a time.
    const losses = (dir: string) =>
      Deno.readTextFile(join(dir, "quickstart", "latest", "losses.csv"));
    assert.equal(await losses(pooled), await losses(sequential));
    assert.ok(summary.bill && summary.bill.step_equivalents === 180, JSON.stringify(summary.bill));
    assert.ok(
      summary.bill.critical_path_s > 0 && summary.bill.critical_path_s < summary.bill.wall_s,
    );

    // A second experiment of the results folder with the same phases trains none of them.
    const second = await runExperiment(QUICKSTART, pooled, ["name=quickstart-again"]);
    assert.equal(second.code, 0, second.stderr);
    const again: RunSummary = await latestSummary(pooled, "quickstart-again");
    for (const p of again.phases) {
      assert.equal(p.shared_from, "quickstart", p.name);
      assert.ok(p.cached);
    }
    const { device_seconds: sharedSeconds, ...shared } = again.bill!.shared;
    assert.deepEqual(shared, { phases: 12, step_equivalents: 180 });
    // In device-seconds: what every phase took where it ran, so what the first run spent.
    assert.ok(
      Math.abs(sharedSeconds! - summary.bill.device_seconds) < 0.01,
      `${sharedSeconds} vs ${summary.bill.device_seconds}`,
    );
    assert.equal(again.bill!.step_equivalents, 0);
    const report = await Deno.readTextFile(
      join(pooled, "quickstart-again", "latest", "report.md"),
    );
    assert.match(
      report,
      /### Cost[\s\S]*Sharing saved 180 step-equivalents, [\d.]+ device-seconds/,
    );

    // A shared checkpoint is checked like a cached one: a changed byte is not reused.
    const tag = join(pooled, "quickstart", "latest", "phases", "split", "checkpoints");
    const file = await firstFile(tag);
    const bytes = await Deno.readFile(file);
    bytes[0] ^= 1;
    await Deno.writeFile(file, bytes);
    const third = await runExperiment(QUICKSTART, pooled, ["name=quickstart-third"]);
    assert.equal(third.code, 0, third.stderr);
    const fresh = await latestSummary(pooled, "quickstart-third");
    const split = fresh.phases.find((p) => p.name === "split")!;
    assert.equal(split.cached, false, "a damaged shared checkpoint was reused");
    assert.equal(fresh.phases.find((p) => p.name === "baseline")!.shared_from, "quickstart");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

async function firstFile(dir: string): Promise<string> {
  for await (const e of Deno.readDir(dir)) {
    const path = join(dir, e.name);
    if (e.isFile && e.name !== "latest") return path;
    if (e.isDirectory) return await firstFile(path);
  }
  throw new Error(`no file under ${dir}`);
}

Deno.test("with a pool, a failure stops only the phases after it in plan order, as one at a time", async () => {
  // replica-drift: the converter refuses; run one at a time, resume-native (before convert in
  // plan order) still runs and FAILs. With a pool that must hold whichever phase started first.
  const results = await Deno.makeTempDir({ prefix: "parity-pool-fail-" });
  try {
    const run = await runExperiment(QUICKSTART, results, [
      POOL,
      "trainer.args.fault=replica-drift",
    ]);
    const summary = await latestSummary(results, "quickstart");
    const status = Object.fromEntries(summary.phases.map((p) => [p.name, p.status]));
    assert.equal(status.convert, "failed");
    assert.equal(status["resume-native"], "ok", JSON.stringify(status));
    assert.equal(run.code, 1, run.stderr);
    assert.equal(summary.verdict, "FAIL");
  } finally {
    await Deno.remove(results, { recursive: true });
  }
});
