import assert from "node:assert/strict";
import type { ComparisonSummary, PhaseSummary, PlanSyncSummary } from "../types/summary.ts";
import { judge, JUDGE_CODES, metricsVerdict, type RunEvidence } from "./judge.ts";

function phase(name: string, status: PhaseSummary["status"] = "ok"): PhaseSummary {
  return { name, role: "baseline", status, cached: false, wall_s: 1, exit_code: 0 };
}

const passing = {
  name: "baseline~resume-native",
  a: "baseline",
  b: "resume-native",
  metric: "loss",
  lane: "exact",
  verdict: "PASS",
  first_step: 21,
  last_step: 40,
  compared: 20,
  first_divergent_step: null,
  last_matching_step: 40,
  max_abs: 0,
  mean_abs: 0,
  max_rel: 0,
  max_ulp: 0,
} as ComparisonSummary;

function evidence(extra: Partial<RunEvidence> = {}): RunEvidence {
  return {
    phases: [phase("baseline")],
    resumeKinds: {},
    saveAt: 20,
    warnings: [],
    metrics: {
      comparisons: [passing],
      state_checks: [],
      noise_floor: { repeats: 0, identical: true },
      diagnostics: [],
    },
    scheduleBounds: [],
    planSync: [],
    planExecutions: [],
    interrupted: null,
    reportFailures: [],
    ...extra,
  };
}

Deno.test("judge() passes clean evidence and leaves warnings out of the verdict", () => {
  const warning = { level: "warning" as const, code: "no-marker", message: "m" };
  const j = judge(evidence({ warnings: [warning] }));
  assert.equal(j.verdict, "PASS");
  assert.deepEqual(j.findings, []);
  assert.deepEqual(j.diagnostics, [warning]);
});

Deno.test("judge() weighs each source by its own rule", () => {
  const bound = { level: "error" as const, code: "metrics-beyond-schedule", message: "m" };
  assert.equal(judge(evidence({ scheduleBounds: [bound] })).verdict, "ERROR");
  assert.equal(judge(evidence({ phases: [phase("baseline", "timeout")] })).verdict, "ERROR");
  const rejected = { policy: "p", phase: "plan-p", verified: false } as PlanSyncSummary;
  assert.equal(judge(evidence({ planSync: [rejected] })).verdict, "FAIL");
  const interrupted = judge(evidence({ interrupted: { reason: "SIGINT" } }));
  assert.equal(interrupted.verdict, "ERROR");
  assert.equal(interrupted.diagnostics.at(-1)?.code, JUDGE_CODES.interrupted);
});

Deno.test("judge() turns a run whose reports were not written ERROR, saying why", () => {
  const e = evidence();
  assert.equal(judge(e).verdict, "PASS");
  e.reportFailures.push("disk full");
  const j = judge(e);
  assert.equal(j.verdict, "ERROR");
  assert.deepEqual(j.diagnostics.map((d) => [d.code, d.message]), [
    [JUDGE_CODES.reportsNotWritten, "the reports could not be written: disk full"],
  ]);
});

Deno.test("metricsVerdict() ignores N/A state checks and weighs diagnostics", () => {
  const na = { phase: "r", verdict: "N/A" as const, available: false, differing: [] };
  assert.equal(metricsVerdict({ comparisons: [], state_checks: [na], diagnostics: [] }), "PASS");
  const lr = { level: "error" as const, code: "lr-schedule-mismatch", message: "m" };
  assert.equal(metricsVerdict({ comparisons: [], state_checks: [], diagnostics: [lr] }), "FAIL");
});
