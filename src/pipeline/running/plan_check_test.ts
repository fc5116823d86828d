import { equal, match } from "node:assert/strict";
import { join } from "node:path";
import { contiguousSplitMap, mapToDict } from "../../affine/mod.ts";
import { checkPlanFile } from "./plan_check.ts";

function writePlan(dir: string, plan: unknown): string {
  const path = join(dir, "plan.json");
  Deno.writeTextFileSync(path, JSON.stringify(plan));
  return path;
}

Deno.test("checkPlanFile() summarises a verified plan with per-process loads", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // [8] on one rank → [8] split over two ranks: two segments, all bytes move.
    const source = mapToDict(contiguousSplitMap([8], [8], 0));
    const target = mapToDict(contiguousSplitMap([8], [4, 4], 0));
    const segments = [
      { shape: [4], source: [0, 0, [1]], target: [0, 0, [1]] },
      { shape: [4], source: [0, 4, [1]], target: [1, 0, [1]] },
    ];
    const plan = {
      schema_version: 1,
      policy: "first_holder",
      source_processes: {},
      target_processes: {},
      parameters: { w: { element_size: 4, source_map: source, target_map: target, segments } },
    };
    const summary = await checkPlanFile("plan-first_holder", "first_holder", writePlan(dir, plan));
    equal(summary.error, undefined);
    equal(summary.verified, true);
    equal(summary.phase, "plan-first_holder");
    equal(summary.segments, 2);
    equal(summary.moved_bytes, 32);
    equal(Object.keys(summary.per_process ?? {}).length > 0, true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("checkPlanFile() names an unreadable plan instead of throwing", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "plan.json");
    Deno.writeTextFileSync(path, "{not json");
    const summary = await checkPlanFile("plan-balanced", "balanced", path);
    equal(summary.verified, false);
    match(summary.error!, /unreadable plan .*plan\.json/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
