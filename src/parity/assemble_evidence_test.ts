import assert from "node:assert/strict";
import { seriesOf } from "../../test/_testing/metrics_fixtures.ts";
import { DRIFT_DEFAULTS, TOLERANCE_DEFAULTS } from "../types/defaults.ts";
import type { PhaseSpec, ResolvedPlan } from "../types/phase_spec.ts";
import type { PhaseSummary, PlanSyncSummary } from "../types/summary.ts";
import { assembleEvidence, type PhaseOutcome, type RunOutcomes } from "./assemble_evidence.ts";
import { judge } from "./judge.ts";

const STEPS = 8;
const SAVE_AT = 4;
// Full-precision values (short decimals would read as rounded metrics).
const loss = (step: number) => 2 * Math.exp(-step / 7.3);

function outcome(
  name: string,
  role: PhaseSpec["role"],
  extra: Partial<PhaseSpec> = {},
  status: PhaseSummary["status"] = "ok",
): PhaseOutcome {
  const spec = {
    name,
    role,
    consumes: [],
    topologyKey: "w2",
    stopAt: role === "split" ? SAVE_AT : STEPS,
    // The split saves the checkpoint the resumes load.
    paths: role === "split" ? { checkpointTag: "global_step4" } : {},
    metrics: { path: `${name}.jsonl`, format: "jsonl" },
    ...(role === "resume"
      ? { resumeKind: "native", lane: { lane: "exact", reason: "same topology" } }
      : {}),
    ...extra,
  } as unknown as PhaseSpec;
  const trains = role === "baseline" || role === "split" || role === "resume";
  const steps = role === "resume"
    ? [5, 6, 7, 8]
    : role === "split"
    ? [1, 2, 3, 4]
    : [1, 2, 3, 4, 5, 6, 7, 8];
  return {
    spec,
    summary: { name, role, status, cached: false, wall_s: 1, exit_code: status === "ok" ? 0 : 1 },
    present: status === "ok",
    ...(trains && status === "ok"
      ? {
        metrics: Promise.resolve(seriesOf(steps, { loss: steps.map(loss) })),
      }
      : {}),
  };
}

function plan(phases: PhaseOutcome[]): ResolvedPlan {
  return {
    experiment: "assemble",
    phases: phases.map((p) => p.spec),
    judge: {
      steps: STEPS,
      saveAt: SAVE_AT,
      saveSteps: [SAVE_AT],
      metrics: ["loss"],
      tolerance: TOLERANCE_DEFAULTS,
      tolerance_declared: false,
      drift: DRIFT_DEFAULTS,
    },
    warnings: [],
  } as unknown as ResolvedPlan;
}

function outcomes(phases: PhaseOutcome[], extra: Partial<RunOutcomes> = {}): RunOutcomes {
  return { phases, interrupted: null, warnings: [], planExecutions: [], ...extra };
}

const verified: PlanSyncSummary = {
  policy: "balanced",
  phase: "plan-balanced",
  verified: true,
  segments: 1,
  moved_bytes: 0,
  local_bytes: 0,
  max_process_bytes: 0,
  mean_process_bytes: 0,
};

Deno.test("assembleEvidence() judges training phases only and passes a clean resume", async () => {
  const phases = [
    outcome("baseline", "baseline"),
    outcome("split", "split"),
    outcome("resume-native", "resume"),
    outcome("convert", "convert"),
  ];
  const { evidence, series } = await assembleEvidence(plan(phases), outcomes(phases));
  assert.deepEqual(evidence.metrics.comparisons.map((c) => [c.name, c.verdict]), [
    ["baseline~resume-native", "PASS"],
  ]);
  assert.ok(!series.has("convert"), "a tool phase's metrics are no evidence");
  assert.deepEqual(evidence.scheduleBounds, []);
  const judged = judge(evidence);
  assert.deepEqual([judged.verdict, judged.exit_code], ["PASS", 0]);
});

Deno.test("assembleEvidence() pairs a plan with the reshards on its topology", async () => {
  const phases = [
    outcome("baseline", "baseline"),
    outcome("split", "split"),
    outcome("resume-universal", "resume", { resumeKind: "universal", topologyKey: "w4" }),
    outcome("resume-native", "resume"),
    { ...outcome("plan-balanced", "plan", { topologyKey: "w4" }), plan: { ...verified } },
    outcome("execute-balanced", "execute", { topologyKey: "w4", policy: "balanced" }, "failed"),
  ];
  const { evidence } = await assembleEvidence(
    plan(phases),
    outcomes(phases, {
      planExecutions: [{
        phase: "execute-balanced",
        policy: "balanced",
        status: "failed",
        message: "exit 1",
        reshards: ["resume-universal"],
      }],
    }),
  );
  assert.deepEqual(evidence.planSync.map((p) => p.reshard_resumes), [["resume-universal"]]);
  assert.equal(evidence.planExecutions[0].verdict, "ERROR");
  assert.match(evidence.planExecutions[0].reason ?? "", /execute-balanced did not complete/);
  assert.equal(evidence.planSync[0].execution, evidence.planExecutions[0]);
  const judged = judge(evidence);
  assert.deepEqual([judged.verdict, judged.exit_code], ["ERROR", 3]);
});

Deno.test("assembleEvidence() leaves a rejected plan's skipped execution out and FAILs", async () => {
  const phases = [
    outcome("baseline", "baseline"),
    outcome("split", "split"),
    outcome("resume-native", "resume"),
    { ...outcome("plan-balanced", "plan"), plan: { ...verified, verified: false } },
    outcome("execute-balanced", "execute", { policy: "balanced" }, "skipped"),
  ];
  const { evidence } = await assembleEvidence(
    plan(phases),
    outcomes(phases, {
      planExecutions: [{
        phase: "execute-balanced",
        policy: "balanced",
        status: "skipped",
        reshards: [],
      }],
    }),
  );
  assert.deepEqual(evidence.planExecutions, []);
  assert.deepEqual([judge(evidence).verdict, judge(evidence).exit_code], ["FAIL", 1]);
});

Deno.test("assembleEvidence() makes steps outside the schedule and a missing golden evidence", async () => {
  const phases = [outcome("baseline", "baseline"), outcome("split", "split")];
  phases.push({
    ...outcome("resume-native", "resume"),
    metrics: Promise.resolve(seriesOf([4, 5, 6, 7, 8], { loss: [4, 5, 6, 7, 8].map(loss) })),
  });
  const { evidence } = await assembleEvidence(
    plan(phases),
    outcomes(phases, {
      golden: { environment_key: "k", file: "goldens/k.jsonl", environment: {} },
    }),
  );
  assert.deepEqual(evidence.scheduleBounds.map((d) => [d.code, d.phase]), [
    ["metrics-before-resume-window", "resume-native"],
  ]);
  assert.equal(evidence.golden?.summary.verdict, "ABSTAIN");
  assert.deepEqual(evidence.golden?.diagnostics.map((d) => d.code), ["golden-missing"]);
  const judged = judge(evidence);
  assert.deepEqual([judged.verdict, judged.exit_code], ["ERROR", 3]);
});
