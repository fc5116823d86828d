import assert from "node:assert/strict";
import { DRIFT_DEFAULTS, TOLERANCE_DEFAULTS } from "../types/defaults.ts";
import { planComparisons } from "./plan_comparisons.ts";
import type { EvaluationInput, PhaseEvidence } from "./types.ts";

function phase(name: string, role: PhaseEvidence["role"], extra: Partial<PhaseEvidence> = {}) {
  return { name, role, status: "ok", ...extra } as PhaseEvidence;
}

// The lanes resolvePlan gives these topologies (its tests cover the rule).
const SAME = { lane: "exact", reason: "same topology as the saved checkpoint" } as const;
const OTHER = {
  lane: "drift",
  reason: "topology differs from the saved checkpoint (world_size 2 → 4)",
} as const;

const phases: PhaseEvidence[] = [
  phase("baseline", "baseline", { topology: "w2" }),
  phase("split", "split", { topology: "w2" }),
  phase("resume-native", "resume", { topology: "w2", resumeKind: "native", lane: SAME }),
  phase("resume-universal", "resume", { topology: "w4", resumeKind: "universal", lane: OTHER }),
  phase("resume-plan-first_holder", "resume", { topology: "w4", resumeKind: "plan", lane: OTHER }),
  phase("resume-pinned", "resume", {
    topology: "w8",
    lane: { lane: "exact", reason: "declared in resume.pinned.lane" },
  }),
  phase("baseline-repeat-1", "repeat", { topology: "w2" }),
];

function input(extra: Partial<EvaluationInput> = {}): EvaluationInput {
  return {
    steps: 40,
    saveAt: 20,
    metrics: ["loss"],
    tolerance: TOLERANCE_DEFAULTS,
    drift: DRIFT_DEFAULTS,
    phases,
    ...extra,
  };
}

const everyone = () => true;

Deno.test("planComparisons() defaults: exact on the saved topology, drift elsewhere", () => {
  const { comparisons } = planComparisons(input(), everyone);
  const lanes = Object.fromEntries(comparisons.map((c) => [c.name, c.lane]));
  assert.deepEqual(lanes, {
    "baseline~resume-native": "exact",
    "baseline~resume-universal": "drift",
    "baseline~resume-plan-first_holder": "drift",
    "baseline~resume-pinned": "exact",
    "resume-universal~resume-plan-first_holder": "exact",
  });
  for (const c of comparisons) assert.deepEqual(c.window, { from: 21, to: 40 });
  const reasons = Object.fromEntries(comparisons.map((c) => [c.name, c.laneReason]));
  assert.equal(reasons["baseline~resume-pinned"], "declared in resume.pinned.lane");
  assert.match(reasons["baseline~resume-universal"], /topology differs/);
  assert.match(reasons["resume-universal~resume-plan-first_holder"], /same target topology/);
});

Deno.test("planComparisons() compares every listed metric both phases report", () => {
  const reports = (p: string, m: string) => m !== "grad_norm" || p !== "resume-universal";
  const { comparisons, diagnostics } = planComparisons(
    input({ metrics: ["loss", "grad_norm"], phases: phases.slice(0, 4) }),
    reports,
  );
  assert.deepEqual(comparisons.map((c) => `${c.name}:${c.metric}`), [
    "baseline~resume-native:loss",
    "baseline~resume-native:grad_norm",
    "baseline~resume-universal:loss",
  ]);
  assert.equal(diagnostics[0].code, "metric-not-reported");
  assert.equal(diagnostics[0].phase, "resume-universal");
});

Deno.test("planComparisons() explicit entries replace the defaults", () => {
  const { comparisons, diagnostics } = planComparisons(
    input({
      compare: [
        { a: "baseline", b: "baseline-repeat-1", metric: "loss", lane: "exact" },
        {
          name: "drift",
          a: "baseline",
          b: "resume-universal",
          metric: "lr",
          lane: "tolerance",
          rtol: 0.01,
          window: { from: 25, to: 30 },
        },
        { a: "baseline", b: "nope", metric: "loss", lane: "exact" },
        { a: "baseline", b: "split", metric: "loss", lane: "exact" },
      ],
    }),
    everyone,
  );
  assert.equal(comparisons.length, 4);
  assert.deepEqual(comparisons[3].window, { from: 1, to: 20 }, "the split logs 1..save_at");
  assert.deepEqual(comparisons[0].window, { from: 1, to: 40 }, "two full runs: the whole run");
  assert.equal(comparisons[1].name, "drift");
  assert.equal(comparisons[1].rtol, 0.01);
  assert.deepEqual(comparisons[1].window, { from: 25, to: 30 });
  assert.equal(diagnostics.length, 1);
  assert.equal(diagnostics[0].code, "unknown-phase");
});

Deno.test("planComparisons() starts a resume's window after its own from_step", () => {
  const early = phase("resume-early", "resume", {
    topology: "w2",
    resumeKind: "native",
    lane: SAME,
    fromStep: 10,
  });
  const late = phase("resume-late", "resume", {
    topology: "w4",
    resumeKind: "native",
    lane: OTHER,
  });
  const plan = planComparisons(
    input({ saveSteps: [10, 20], phases: [phases[0], phases[1], early, late] }),
    () => true,
  );
  const window = (name: string) => plan.comparisons.find((c) => c.name === name)?.window;
  assert.deepEqual(window("baseline~resume-early"), { from: 11, to: 40 });
  assert.deepEqual(window("baseline~resume-late"), { from: 21, to: 40 });
  // An explicit entry between two resumes starts where both ran.
  const explicit = planComparisons(
    input({
      phases: [phases[0], phases[1], early, late],
      compare: [{ a: "resume-early", b: "resume-late", metric: "loss", lane: "exact" }],
    }),
    () => true,
  );
  assert.deepEqual(explicit.comparisons[0].window, { from: 21, to: 40 });
});
