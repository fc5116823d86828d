import assert from "node:assert/strict";
import { withTempDir } from "../_testing/metrics_fixtures.ts";
import { evaluateRun } from "../../src/parity/evaluate.ts";
import type { PhaseEvidence } from "../../src/parity/types.ts";
import { DRIFT_DEFAULTS, TOLERANCE_DEFAULTS } from "../../src/types/defaults.ts";

/** The judge settings of a run that sets none. */
const SETTINGS = { tolerance: TOLERANCE_DEFAULTS, drift: DRIFT_DEFAULTS };

const TRAINER = new URL("./noisy_trainer.ts", import.meta.url).pathname;
const STEPS = 12;
const SAVE_AT = 6;

async function phase(
  dir: string,
  name: string,
  noise: string,
  env: Record<string, string>,
  fault?: string,
): Promise<string> {
  const metrics = `${dir}/${name}.jsonl`;
  const faults = fault === undefined ? [] : ["--fault", fault];
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", TRAINER, "--noise", noise, "--world-size", "2", ...faults],
    env: {
      PARITY_PHASE: name,
      PARITY_STEPS: String(STEPS),
      PARITY_STOP_AT: String(STEPS),
      PARITY_SEED: "7",
      PARITY_METRICS_FILE: metrics,
      PARITY_RUN_DIR: dir,
      ...env,
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return metrics;
}

/** baseline, one repeat, split at SAVE_AT and a native resume; returns the phases. */
async function runAll(dir: string, noise: string, fault?: string): Promise<PhaseEvidence[]> {
  const ckpt = `${dir}/ckpt`;
  const ok = (name: string, role: PhaseEvidence["role"], metricsPath: string): PhaseEvidence => ({
    name,
    role,
    status: "ok",
    metricsPath,
    topology: "w2",
    // The lane resolvePlan gives a resume on the saved topology.
    ...(role === "resume"
      ? { lane: { lane: "exact", reason: "same topology as the saved checkpoint" } as const }
      : {}),
  });
  return [
    ok("baseline", "baseline", await phase(dir, "baseline", noise, {})),
    ok("baseline-repeat-1", "repeat", await phase(dir, "baseline-repeat-1", noise, {})),
    ok(
      "split",
      "split",
      await phase(dir, "split", noise, {
        PARITY_STOP_AT: String(SAVE_AT),
        PARITY_SAVE_AT: String(SAVE_AT),
        PARITY_CHECKPOINT_DIR: ckpt,
      }),
    ),
    ok(
      "resume-native",
      "resume",
      await phase(dir, "resume-native", noise, { PARITY_RESUME_FROM: ckpt }, fault),
    ),
  ];
}

/** The engine's judgement of the phases, on `metrics`. */
function judge(phases: Awaited<ReturnType<typeof runAll>>, metrics: string[]) {
  return evaluateRun({ steps: STEPS, saveAt: SAVE_AT, metrics, phases, ...SETTINGS });
}

Deno.test("noisy_trainer ends in ABSTAIN: the exact lane ABSTAINs, the derived lane PASSes", async () => {
  await withTempDir(async (dir) => {
    const phases = await runAll(dir, "1e-7");
    const e = await judge(phases, ["loss"]);
    assert.equal(e.verdict, "ABSTAIN");
    assert.equal(e.noise_floor.identical, false);
    assert.ok((e.noise_floor.max_rel_deviation ?? 0) <= 2e-7);
    assert.deepEqual(e.comparisons.map((c) => [c.lane, c.verdict]), [
      ["exact", "ABSTAIN"],
      ["tolerance", "PASS"],
    ]);
    assert.equal(e.state_checks[0].verdict, "N/A", "the fixture emits no digests");
    const resumed = e.series.get("resume-native");
    assert.deepEqual([...(resumed?.steps ?? [])], [7, 8, 9, 10, 11, 12]);
    assert.equal(resumed?.events[0].event, "loaded");
  });
});

Deno.test("noisy_trainer --noise 0 is bit-reproducible and PASSes", async () => {
  await withTempDir(async (dir) => {
    const phases = await runAll(dir, "0");
    const e = await judge(phases, ["loss", "lr"]);
    assert.equal(e.verdict, "PASS", JSON.stringify(e.comparisons.map((c) => c.reason)));
    assert.deepEqual(e.comparisons.map((c) => c.metric), ["loss", "lr"]);
    assert.equal(e.noise_floor.identical, true);
  });
});

Deno.test("noisy_trainer --fault lost-momentum resumes from a zero momentum", async () => {
  await withTempDir(async (dir) => {
    const phases = await runAll(dir, "0", "lost-momentum");
    const e = await judge(phases, ["loss"]);
    assert.equal(e.verdict, "FAIL");
    assert.equal(e.comparisons[0].first_divergent_step, SAVE_AT + 1);
    assert.ok((e.comparisons[0].max_rel ?? 0) > 1e-3, `max_rel ${e.comparisons[0].max_rel}`);
  });
});
