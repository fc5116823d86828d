import { deepEqual, equal, ok } from "node:assert/strict";
import { attribution, singlePlanFile } from "./_testing.ts";
import { mapFromDict } from "./map.ts";
import { planTransfer, planTransfers } from "./plan_transfers.ts";
import type { TransferSegmentDict } from "./plan_transfers.ts";
import { firstHolder, highestHolder } from "./policies.ts";
import { verifyPlan } from "./verify.ts";

interface VectorCase {
  name: string;
  source_map: unknown;
  target_map: unknown;
  deepspeed_plan_lowest_holder: { segments: TransferSegmentDict[]; moved_elements: number };
  deepspeed_plan_highest_holder: { segments: TransferSegmentDict[]; moved_elements: number };
}

const vectors = JSON.parse(
  await Deno.readTextFile(new URL("./testdata/deepspeed_plans.json", import.meta.url)),
) as { cases: VectorCase[] };

Deno.test("the vector file holds DeepSpeed's 14 cases", () => {
  equal(vectors.cases.length, 14);
});

for (const c of vectors.cases) {
  Deno.test(`verifyPlan() accepts and executes DeepSpeed's plans for ${c.name}`, () => {
    for (const plan of [c.deepspeed_plan_lowest_holder, c.deepspeed_plan_highest_holder]) {
      const verdict = verifyPlan(singlePlanFile(c.source_map, c.target_map, plan.segments), {
        execute: true,
      });
      equal(verdict.error, null);
      ok(verdict.ok && verdict.executed);
      equal(verdict.stats!.movedElements, plan.moved_elements);
      equal(verdict.stats!.movedBytes, plan.moved_elements * 4);
    }
  });

  Deno.test(`planTransfers() delivers DeepSpeed's elements from DeepSpeed's ranks for ${c.name}`, () => {
    const source = mapFromDict(c.source_map), target = mapFromDict(c.target_map);
    for (
      const [policy, ds, selector] of [
        [firstHolder, c.deepspeed_plan_lowest_holder, undefined],
        [
          highestHolder,
          c.deepspeed_plan_highest_holder,
          (r: { holders: { location: number }[] }) => Math.max(...r.holders.map((h) => h.location)),
        ],
      ] as const
    ) {
      const plans = planTransfers({ w: { source, target } }, { policy });
      const ours = plans.parameters.get("w")!;
      deepEqual(attribution(ours.segments), attribution(ds.segments));
      equal(ours.movedElements, ds.moved_elements);
      ok(ours.segments.length <= ds.segments.length, "coalescing is at least as good");
      const single = planTransfer(target, source, selector ? { selector } : {});
      deepEqual(attribution(single.segments), attribution(ds.segments));
      const verdict = verifyPlan(singlePlanFile(c.source_map, c.target_map, ours.segments));
      equal(verdict.error, null);
    }
  });
}
