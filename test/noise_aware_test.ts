/**
 * Noise-aware by default (docs/parity.md, "Noise floor, ABSTAIN and `tolerance: auto`"): with
 * `noise_floor.repeats` and default lanes, a nondeterministic trainer's exact lanes ABSTAIN and
 * their companion lanes at the noise-derived rtol judge it, so the clean noisy trainer never
 * FAILs and a lost momentum on resume does. Every run is a real `parity run` process.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import type { RunSummary } from "../src/types/summary.ts";
import {
  denoCommand,
  latestSummary,
  runExperiment,
  writeExperiment,
} from "./_testing/cli_harness.ts";

/** The noisy trainer (1e-7 relative noise per step) with two repeated baselines. */
function noisyExperiment(name: string, ...flags: string[]) {
  return {
    name,
    schedule: { steps: 20, save_at: 10 },
    trainer: { command: denoCommand("noisy_trainer.ts", ...flags) },
    resume: { native: { from: "native" } },
    noise_floor: { repeats: 2 },
  };
}

/** Runs one experiment in a fresh folder and returns its exit code and summary. */
async function run(experiment: { name: string }): Promise<{ code: number; summary: RunSummary }> {
  const dir = await Deno.makeTempDir({ prefix: "noise-aware-" });
  try {
    const file = await writeExperiment(dir, `${experiment.name}.yaml`, experiment);
    const results = join(dir, "results");
    const { code } = await runExperiment(file, results);
    return { code, summary: await latestSummary(results, experiment.name) };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** `lane verdict` of every comparison, for messages and checks. */
function lanes(summary: RunSummary): string[] {
  return summary.comparisons.map((c) => `${c.name} ${c.lane} ${c.verdict}`);
}

Deno.test("noise-aware: the clean noisy trainer ends ABSTAIN, its derived lane PASSes", async () => {
  const { code, summary } = await run(noisyExperiment("noisy-clean"));
  const noise = summary.noise_floor;
  assert.equal(noise.identical, false);
  const maxRel = noise.max_rel_deviation ?? 0;
  assert.ok(maxRel > 0 && maxRel <= 2e-7, `max_rel_deviation ${maxRel}`);
  assert.equal(noise.derived_rtol, Math.max(maxRel * 10, 2 ** -20));
  assert.deepEqual(noise.derivation, { multiplier: 10, floor: 2 ** -20, source: "default" });
  assert.equal(code, 4, lanes(summary).join("\n"));
  assert.equal(summary.verdict, "ABSTAIN");
  assert.deepEqual(lanes(summary), [
    "baseline~resume-native exact ABSTAIN",
    "baseline~resume-native tolerance PASS",
  ]);
  assert.equal(summary.comparisons[1].rtol, noise.derived_rtol);
});

Deno.test("noise-aware: a lost momentum on resume FAILs (exit 1) above the noise", async () => {
  const { code, summary } = await run(noisyExperiment("noisy-bug", "--fault", "lost-momentum"));
  assert.equal(summary.noise_floor.identical, false, "the repeats are not resumes: still noisy");
  assert.equal(code, 1, lanes(summary).join("\n"));
  assert.equal(summary.verdict, "FAIL");
  const [exact, derived] = summary.comparisons;
  assert.equal(exact.verdict, "ABSTAIN");
  assert.equal(derived.lane, "tolerance");
  assert.equal(derived.verdict, "FAIL");
  assert.equal(derived.first_divergent_step, 11, "the first resumed step");
  // The bug is orders of magnitude above the derived tolerance, not a borderline call.
  assert.ok(
    (derived.max_rel ?? 0) > 100 * (summary.noise_floor.derived_rtol ?? 1),
    `max_rel ${derived.max_rel} against derived rtol ${summary.noise_floor.derived_rtol}`,
  );
});
