import assert from "node:assert/strict";
import type { ComparisonSummary, Verdict } from "../types/summary.ts";
import { blamedPhases, culprits } from "./culprit.ts";

function cmp(
  a: string,
  b: string,
  verdict: Verdict,
  step: number | null = null,
): ComparisonSummary {
  return {
    name: `${a}~${b}`,
    a,
    b,
    metric: "loss",
    lane: "exact",
    verdict,
    first_step: 21,
    last_step: 40,
    compared: 20,
    first_divergent_step: step,
    last_matching_step: null,
    max_abs: null,
    mean_abs: null,
    max_rel: null,
    max_ulp: null,
  };
}

const phases = [
  { name: "baseline", role: "baseline" as const },
  { name: "split", role: "split" as const },
  { name: "resume-universal", role: "resume" as const },
  { name: "resume-reshard", role: "resume" as const },
  { name: "resume-plan-balanced", role: "resume" as const },
];

Deno.test("culprits() blames the resume that fails against the baseline, not side b", () => {
  // The quickstart with a converter fault: the plan resume matches the baseline, the reshard
  // does not, so reshard~plan fails because of the reshard.
  const comparisons = [
    cmp("baseline", "resume-universal", "FAIL", 22),
    cmp("baseline", "resume-reshard", "FAIL", 22),
    cmp("baseline", "resume-plan-balanced", "PASS"),
    cmp("resume-reshard", "resume-plan-balanced", "FAIL", 22),
  ];
  const run = { phases, comparisons };
  assert.deepEqual(blamedPhases(comparisons[3], run), ["resume-reshard"]);
  assert.deepEqual(culprits(run).map((c) => [c.phase, c.step, c.comparisons.length]), [
    ["resume-universal", 22, 1],
    ["resume-reshard", 22, 2],
  ]);
});

Deno.test("blamedPhases() between two resumes: both when both fail, b when nothing is known", () => {
  const both = [
    cmp("baseline", "resume-reshard", "FAIL", 23),
    cmp("baseline", "resume-plan-balanced", "FAIL", 25),
    cmp("resume-reshard", "resume-plan-balanced", "FAIL", 24),
  ];
  assert.deepEqual(blamedPhases(both[2], { phases, comparisons: both }), [
    "resume-reshard",
    "resume-plan-balanced",
  ]);
  const alone = [cmp("resume-reshard", "resume-plan-balanced", "FAIL", 24)];
  assert.deepEqual(blamedPhases(alone[0], { phases, comparisons: alone }), [
    "resume-plan-balanced",
  ]);
  assert.deepEqual(
    blamedPhases(cmp("baseline", "resume-reshard", "PASS"), { phases, comparisons: [] }),
    [],
  );
  // The earliest step wins.
  assert.deepEqual(culprits({ phases, comparisons: both }).map((c) => [c.phase, c.step]), [
    ["resume-reshard", 23],
    ["resume-plan-balanced", 24],
  ]);
});
