/**
 * The DeepSpeed plan timer behind `bench/affine_scaling_bench.ts`: DeepSpeed's installed
 * `plan_transfer` plans a small map set segment for segment as the harness's planner does, with
 * and without a `replica_selector`, and a capped run reports its timeout. Needs `.venv-deepspeed/`
 * (`deno task setup-deepspeed`): CI creates it first and these tests fail there without it; on a
 * machine without it they are ignored, saying why.
 */

import assert from "node:assert/strict";
import { makePlacement, placementToMap, planTransfers } from "../src/affine/mod.ts";
import { firstHolder, highestHolder } from "../src/affine/mod.ts";
import type { MapPair, PlacementDescriptor, TransferSegmentDict } from "../src/affine/mod.ts";
import {
  budgetToDeepSpeed,
  deepspeedAvailable,
  firstSegmentDifference,
  NO_VENV_SENTENCE,
  startDeepSpeedTimer,
} from "./_deepspeed_timer.ts";
import { SCALING_BUDGET, scalingPair } from "./affine_scaling_bench.ts";

const available = deepspeedAvailable();
const inCi = Deno.env.get("CI") === "true";
if (!available && !inCi) {
  console.error(`DeepSpeed timer tests ignored: ${NO_VENV_SENTENCE}`);
}
const ignore = !available && !inCi;

type Placements = { source: PlacementDescriptor; target: PlacementDescriptor };

/** Small layouts covering what the bench's scenarios do: hot replicas, strides, two holders. */
function smallSet(): { pairs: Map<string, MapPair>; placements: Map<string, Placements> } {
  const hot = (byRank: number[][]) => byRank.map((own) => [0, 1, ...own.filter((e) => e > 1)]);
  const layouts: Record<string, [number, number[][], number[][], number[]]> = {
    // EP 2 with experts 0 and 1 on both ranks → EP 4 contiguous.
    hot: [8, hot([[0, 1, 2, 3], [4, 5, 6, 7]]), [[0, 1], [2, 3], [4, 5], [6, 7]], [8, 3, 4]],
    // EP 2 strided → EP 4 contiguous.
    strided: [8, [[0, 2, 4, 6], [1, 3, 5, 7]], [[0, 1], [2, 3], [4, 5], [6, 7]], [8, 4, 3]],
    // Every expert on two of four ranks → EP 2 contiguous.
    two: [8, [[0, 1, 6, 7], [2, 3, 0, 1], [4, 5, 2, 3], [6, 7, 4, 5]], [[0, 1, 2, 3], [
      4,
      5,
      6,
      7,
    ]], [8, 2, 5]],
  };
  const pairs = new Map<string, MapPair>(), placements = new Map<string, Placements>();
  for (const [name, [experts, source, target, shape]] of Object.entries(layouts)) {
    const p = { source: makePlacement(experts, source), target: makePlacement(experts, target) };
    placements.set(name, p);
    pairs.set(name, {
      source: placementToMap(p.source, shape),
      target: placementToMap(p.target, shape),
    });
  }
  return { pairs, placements };
}

function segmentsOf(pairs: Map<string, MapPair>, policy = firstHolder) {
  const out = new Map<string, TransferSegmentDict[]>();
  for (const [name, p] of planTransfers(pairs, { policy }).parameters) out.set(name, p.segments);
  return out;
}

Deno.test("firstSegmentDifference() names the parameter and the first differing segment", () => {
  const { pairs } = smallSet();
  const ours = segmentsOf(pairs);
  const same = Object.fromEntries([...ours].map(([k, v]) => [k, structuredClone(v)]));
  assert.equal(firstSegmentDifference(ours, same), null);
  const shifted = structuredClone(same);
  shifted.strided[1].source[1] += 1;
  const d = firstSegmentDifference(ours, shifted);
  assert.match(d ?? "", /^parameter strided, segment 1 /);
  const short = structuredClone(same);
  short.two.pop();
  assert.match(
    firstSegmentDifference(ours, short) ?? "",
    /parameter two, segment \d+ .*DeepSpeed none/,
  );
  const { two: _, ...missing } = same;
  assert.equal(firstSegmentDifference(ours, missing), "parameter two: planned by the harness only");
});

Deno.test("budgetToDeepSpeed() gives DeepSpeed's PlanBudget names and refuses non-integers", () => {
  assert.deepEqual(budgetToDeepSpeed({ maxPairChecks: 4, maxMergeChecks: 9 }), {
    max_pair_checks: 4,
    max_merge_checks: 9,
  });
  assert.throws(() => budgetToDeepSpeed({ maxMergeChecks: Infinity }), RangeError);
});

Deno.test({
  name: "DeepSpeed's plan_transfer plans as the harness does; caps and budgets reach it",
  ignore,
  async fn(t) {
    assert.ok(available, "CI must run `deno task setup-deepspeed` before the tests (.ci/run does)");
    // One timer for every step: starting it (torch and DeepSpeed imports) is most of the cost.
    const ds = await startDeepSpeedTimer();
    try {
      await t.step("the small set, both selectors, segment for segment", async () => {
        assert.match(ds.versions.deepspeed, /^\d+\.\d+/);
        const { pairs, placements } = smallSet();
        const loaded = await ds.load("small", pairs, { placements });
        assert.deepEqual(loaded.loweringDiffers, [], "maps equal DeepSpeed's own AutoEP lowering");
        const plans = new Map<string, Map<string, TransferSegmentDict[]>>();
        const selectors = [["first_holder", firstHolder], [
          "highest_holder",
          highestHolder,
        ]] as const;
        for (const [selector, policy] of selectors) {
          const timing = await ds.time("small", selector, { runs: 2, segments: true });
          assert.equal(timing.timedOut, false);
          assert.equal(timing.runs.length, 2);
          assert.ok(timing.runs.every((r) => r.wall_ms > 0 && r.cpu_ms >= 0));
          const ours = segmentsOf(pairs, policy);
          assert.equal(firstSegmentDifference(ours, timing.segments!), null, selector);
          plans.set(selector, ours);
        }
        // The selector really chose: the replicated layouts read other holders.
        for (const name of ["hot", "two"]) {
          assert.notDeepEqual(
            plans.get("first_holder")!.get(name),
            plans.get("highest_holder")!.get(name),
          );
        }
        assert.deepEqual(
          plans.get("first_holder")!.get("strided"),
          plans.get("highest_holder")!.get("strided"),
        );
      });
      await t.step("a refusal under DeepSpeed's default budget, then a capped run", async () => {
        const pairs = scalingPair(1024);
        // 1024 source pieces: DeepSpeed's default budget refuses them (1024² holder checks).
        await ds.load("default", pairs);
        await assert.rejects(ds.time("default", "first_holder"), /max_pair_checks/);
        await ds.load("raised", pairs, { budget: SCALING_BUDGET });
        const timing = await ds.time("raised", "first_holder", { runs: 3, timeoutS: 0.05 });
        assert.equal(timing.timedOut, true);
        assert.equal(timing.runs.length, 0);
      });
    } finally {
      await ds.close();
    }
  },
});

Deno.test("the side-by-side bench ends with one sentence when DeepSpeed is missing", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("./affine_scaling_bench.ts", import.meta.url).pathname],
    env: { PARITY_DEEPSPEED_VENV: "/nonexistent/venv", NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr).trim();
  assert.equal(out.code, 3, stderr);
  assert.equal(
    stderr,
    "DeepSpeed is not installed at /nonexistent/venv: run deno task setup-deepspeed " +
      "(or point PARITY_DEEPSPEED_VENV at a venv with deepspeed).",
  );
});
