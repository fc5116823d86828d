import assert from "node:assert/strict";
import { makePlacement, mapToDict, placementToMap } from "./map.ts";
import { buildPlanFile, type PlanFile } from "./plan_file.ts";
import { planTransfers } from "./plan_transfers.ts";
import { firstHolder, localFirstLeastLoaded } from "./policies.ts";
import { secondOpinion } from "./second_opinion.ts";

// Two replicas of four experts → two ranks with two experts each: every region has two holders.
function plan(policyName: string): PlanFile {
  const source = placementToMap(makePlacement(4, [[0, 1, 2, 3], [0, 1, 2, 3]]), [4, 2, 3]);
  const target = placementToMap(makePlacement(4, [[0, 1], [2, 3]]), [4, 2, 3]);
  const pairs = new Map([["w", { source, target }]]);
  const identity = new Map([[0, 0], [1, 1]]);
  const policy = policyName === "first_holder" ? firstHolder : localFirstLeastLoaded;
  const plans = planTransfers(pairs, {
    policy,
    elementSize: 4,
    sourceProcesses: identity,
    targetProcesses: identity,
  });
  const file = buildPlanFile(plans, {
    policy: policyName,
    pairs,
    sourceProcesses: identity,
    targetProcesses: identity,
  });
  return { ...file, planner: { name: "other" } };
}

Deno.test("secondOpinion() agrees with a plan the harness would make itself", () => {
  const found = secondOpinion(plan("local_first_least_loaded"));
  assert.deepEqual(found, { available: true, equal: true, parameters: 1, differingParameters: 0 });
});

Deno.test("secondOpinion() names the first differing segment of another planner's plan", () => {
  const theirs = plan("first_holder");
  // Another planner's first_holder reads rank 1's region from location 0; relabel it as the
  // batch policy, which reads it locally: the second opinion must say where they part.
  const relabelled = { ...theirs, policy: "local_first_least_loaded" };
  const found = secondOpinion(relabelled);
  assert.equal(found.available, true);
  assert.equal(found.equal, false);
  assert.equal(found.differingParameters, 1);
  assert.match(found.firstDifference ?? "", /^w: segment \d+ of \d+ vs \d+: the plan has .*source/);
});

Deno.test("secondOpinion() is unavailable for a policy or map the harness does not know", () => {
  const unknown = secondOpinion({ ...plan("first_holder"), policy: "cost_aware" });
  assert.equal(unknown.available, false);
  assert.match(unknown.firstDifference ?? "", /no policy "cost_aware"/);
  const broken = plan("first_holder");
  broken.parameters.w.source_map = mapToDict(
    placementToMap(makePlacement(4, [[0, 1], [2, 3]]), [4, 2, 3]),
  );
  broken.parameters.w.source_map.logical_shape = [4, 2, 4];
  const refused = secondOpinion(broken);
  assert.equal(refused.available, false);
  assert.match(refused.firstDifference ?? "", /refuses the maps/);
});
