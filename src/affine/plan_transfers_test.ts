import { deepEqual, equal, ok, throws } from "node:assert/strict";
import { attribution } from "./_testing.ts";
import { InvalidMapError, InvalidReplicaPolicyError, PlanBudgetError } from "./affine_errors.ts";
import { contiguousSplitMap, makePlacement, placementToMap, replicatedMap } from "./map.ts";
import { coalesceSegments, planTransfers } from "./plan_transfers.ts";
import type { TransferSegmentDict } from "./plan_transfers.ts";
import type { ReplicaPolicy, ReplicaRequest } from "./policies.ts";
import { firstHolder } from "./policies.ts";
import { DEFAULT_PLAN_BUDGET } from "./validate_map.ts";

// A [8, 4] parameter replicated on source ranks 0 and 1, row-split over target ranks 0 and 1:
// two requests, each for a [4, 4] region with holders [0, 1].
const replicated = () => ({
  w: { source: replicatedMap([8, 4], [0, 1]), target: contiguousSplitMap([8, 4], [4, 4], 0) },
});

function answering(...answers: unknown[]): ReplicaPolicy {
  return () => answers;
}

function refused(policy: ReplicaPolicy, pattern: RegExp, options = {}, pairs = replicated()) {
  throws(() => planTransfers(pairs, { policy, ...options }), (e: unknown) => {
    ok(e instanceof InvalidReplicaPolicyError, `expected InvalidReplicaPolicyError, got ${e}`);
    ok(pattern.test((e as Error).message), (e as Error).message);
    return true;
  });
}

const part = (sourceLocation: unknown, logicalOrigin: unknown, shape: unknown) => ({
  sourceLocation,
  logicalOrigin,
  shape,
});

Deno.test("planTransfers() sends every request in one call, ordered, single holders included", () => {
  const calls: ReplicaRequest[][] = [];
  const pairs = {
    // Listed out of order: the planner sorts parameters by name.
    z: { source: contiguousSplitMap([4], [2, 2], 0), target: replicatedMap([4], [0, 1]) },
    a: { source: replicatedMap([6, 2], [0, 1]), target: contiguousSplitMap([6, 2], [3, 3], 0) },
  };
  planTransfers(pairs, {
    policy: (requests) => {
      calls.push([...requests]);
      return requests.map((r) => r.holders[0].location);
    },
    elementSize: { a: 2, z: 8 },
    sourceProcesses: { 0: 0, 1: 1 },
    targetProcesses: { 0: 1, 1: 0 },
  });
  equal(calls.length, 1);
  deepEqual(calls[0].map((r) => [r.parameter, r.targetLocation, r.logicalOrigin]), [
    ["a", 0, [0, 0]],
    ["a", 1, [3, 0]],
    ["z", 0, [0]],
    ["z", 0, [2]],
    ["z", 1, [0]],
    ["z", 1, [2]],
  ]);
  deepEqual(calls[0][0], {
    parameter: "a",
    targetLocation: 0,
    targetProcess: 1,
    logicalOrigin: [0, 0],
    shape: [3, 2],
    bytes: 12,
    holders: [{ location: 0, process: 0 }, { location: 1, process: 1 }],
  });
  deepEqual(calls[0][3].holders, [{ location: 1, process: 1 }]);
  equal(calls[0][3].bytes, 16);
});

Deno.test("planTransfers() omits processes from requests without mappings", () => {
  let seen: readonly ReplicaRequest[] = [];
  planTransfers(replicated(), {
    policy: (r) => ((seen = r), firstHolder(r, { minSplitBytes: 0 })),
  });
  equal("targetProcess" in seen[0], false);
  equal("process" in seen[0].holders[0], false);
});

Deno.test("planTransfers() validates the maps before the policy runs", () => {
  let called = false;
  const bad = contiguousSplitMap([8, 4], [4, 4], 0);
  bad.ranks.get(1)!.pieces[0].locations = [0, 1]; // rank 0 does not hold rows 4..7
  throws(
    () =>
      planTransfers({ w: { source: bad, target: replicatedMap([8, 4], [0]) } }, {
        policy: (r) => ((called = true), firstHolder(r, { minSplitBytes: 0 })),
      }),
    InvalidMapError,
  );
  equal(called, false);
});

Deno.test("planTransfers() refuses a holder that is not a validated candidate", () => {
  refused(answering(0, 999), /location 999 is not a validated holder/);
  refused(answering(0, -1), /location -1 is not a validated holder/);
});

Deno.test("planTransfers() refuses booleans, floats, null and strings as answers", () => {
  refused(answering(0, true), /boolean/);
  refused(answering(0, false), /boolean/);
  refused(answering(0, 1.5), /location 1.5 is not a validated holder/);
  refused(answering(0, null), /neither a holder location nor a list of parts/);
  refused(answering(0, "1"), /neither a holder location nor a list of parts/);
  refused(answering(0, { sourceLocation: 1 }), /neither/);
});

Deno.test("planTransfers() refuses parts with a gap, an overlap or rows outside the region", () => {
  refused(
    answering(0, [part(0, [4, 0], [1, 4]), part(1, [6, 0], [2, 4])]),
    /rows \[5, 6\) have no part/,
  );
  refused(answering(0, [part(0, [4, 0], [3, 4])]), /rows \[7, 8\) have no part/);
  refused(answering(0, [part(0, [4, 0], [3, 4]), part(1, [6, 0], [2, 4])]), /overlap at row 6/);
  refused(answering(0, [part(0, [4, 0], [2, 4]), part(1, [6, 0], [3, 4])]), /outside the region/);
  refused(answering(0, [part(0, [3, 0], [5, 4])]), /outside the region/);
});

Deno.test("planTransfers() refuses cuts along axis 1, empty parts and wrong axis counts", () => {
  refused(answering(0, [part(0, [4, 0], [4, 2]), part(1, [4, 2], [4, 2])]), /cuts axis 1/);
  refused(answering(0, [part(0, [4, 0], [0, 4]), part(1, [4, 0], [4, 4])]), /empty part/);
  refused(answering(0, [part(0, [4], [4])]), /1-axis origin and 1-axis shape for a 2-axis region/);
  refused(answering(0, [part(0, [4, 0, 0], [4, 4, 1])]), /3-axis origin/);
  refused(answering(0, []), /no parts/);
});

Deno.test("planTransfers() refuses non-iterable part fields with its own error, not TypeError", () => {
  refused(answering(0, [part(1, null, [4, 4])]), /logicalOrigin null is not iterable/);
  refused(answering(0, [part(1, [4, 0], 7)]), /shape 7 is not iterable/);
  refused(answering(0, [part(1, { x: 1 }, [4, 4])]), /logicalOrigin is not iterable/);
  refused(answering(0, [part(1, [4, "0"], [4, 4])]), /not an integer/);
  refused(answering(0, [part(true, [4, 0], [4, 4])]), /location true is not a validated holder/);
  refused(answering(0, [null]), /null is not a part/);
  // Any iterable of integers is accepted as coordinates.
  const plans = planTransfers(replicated(), {
    policy: answering(0, [part(
      1,
      new Set([4, 0]),
      (function* () {
        yield 4;
        yield 4;
      })(),
    )]),
  });
  equal(plans.parameters.get("w")!.movedElements, 32);
});

Deno.test("planTransfers() refuses the wrong number of answers", () => {
  refused(answering(0), /1 answers for 2 requests/);
  refused(answering(0, 1, 0), /3 answers for 2 requests/);
  refused(() => 0, /something other than a list/);
});

Deno.test("planTransfers() refuses splits under minSplitBytes but not whole answers", () => {
  const split = answering(0, [part(0, [4, 0], [1, 4]), part(1, [5, 0], [3, 4])]);
  // 1 row = 4 elements × 4 bytes = 16 bytes.
  refused(split, /part at row 4 is 16 bytes, under minSplitBytes 17/, {
    elementSize: 4,
    minSplitBytes: 17,
  });
  planTransfers(replicated(), { policy: split, elementSize: 4, minSplitBytes: 16 });
  planTransfers(replicated(), { policy: answering(0, 1), elementSize: 4, minSplitBytes: 1 << 20 });
  planTransfers(replicated(), {
    policy: answering(0, [part(1, [4, 0], [4, 4])]),
    elementSize: 4,
    minSplitBytes: 1 << 20,
  });
});

Deno.test("planTransfers() bounds the parts of a parameter, accumulated across requests", () => {
  const rows = (from: number) => [0, 1, 2, 3].map((k) => part(k % 2, [from + k, 0], [1, 4]));
  const budget = { maxPairChecks: 7 };
  // 4 + 4 = 8 parts > 7, though each answer alone fits.
  refused(answering(rows(0), rows(4)), /would have 8 parts, over maxPairChecks 7/, { budget });
  planTransfers(replicated(), { policy: answering(rows(0), 1), budget });
});

Deno.test("planTransfers() decides the pair budget from the answer's length before reading parts", () => {
  let read = 0;
  const huge: unknown[] = new Array(1000);
  for (let i = 0; i < huge.length; i++) {
    Object.defineProperty(huge, i, {
      get() {
        read++;
        return part(0, [i, 0], [1, 4]);
      },
    });
  }
  refused(answering(0, huge), /1001 parts, over maxPairChecks 64/, {
    budget: { maxPairChecks: 64 },
  });
  equal(read, 0);
});

Deno.test("planTransfers() emits nothing when a later answer is refused", () => {
  let plans: unknown = null;
  throws(() => (plans = planTransfers(replicated(), { policy: answering(0, 7) })));
  equal(plans, null);
});

Deno.test("planTransfers() accepts parts in any order and emits sorted, coalesced segments", () => {
  const plans = planTransfers(replicated(), {
    policy: answering(1, [part(1, [6, 0], [2, 4]), part(0, [4, 0], [2, 4])]),
  });
  deepEqual(plans.parameters.get("w")!.segments, [
    { shape: [4, 4], source: [1, 0, [4, 1]], target: [0, 0, [4, 1]] },
    { shape: [2, 4], source: [0, 16, [4, 1]], target: [1, 0, [4, 1]] },
    { shape: [2, 4], source: [1, 24, [4, 1]], target: [1, 8, [4, 1]] },
  ]);
  equal(plans.splitRequests, 1);
});

Deno.test("planTransfers() is deterministic whatever order the pairs are given in", () => {
  const a = {
    x: { source: replicatedMap([5, 3], [0, 1, 2]), target: contiguousSplitMap([5, 3], [2, 3], 0) },
    y: { source: contiguousSplitMap([7], [3, 4], 0), target: contiguousSplitMap([7], [1, 6], 0) },
  };
  const b = { y: a.y, x: a.x };
  const one = planTransfers(a), two = planTransfers(b);
  deepEqual([...one.parameters.entries()], [...two.parameters.entries()]);
});

Deno.test("planTransfers() refuses mismatched shapes and missing process entries", () => {
  throws(
    () =>
      planTransfers({
        w: { source: replicatedMap([4], [0]), target: replicatedMap([5], [0]) },
      }),
    InvalidMapError,
  );
  throws(
    () => planTransfers(replicated(), { sourceProcesses: { 0: 0 } }),
    /no process for location 1/,
  );
  throws(
    () => planTransfers(replicated(), { elementSize: { other: 4 } }),
    /no positive integer size/,
  );
});

Deno.test("planTransfers() enforces segment and pair budgets with PlanBudgetError", () => {
  const pairs = {
    w: {
      source: contiguousSplitMap([8, 8], [1, 1, 1, 1, 1, 1, 1, 1], 0),
      target: contiguousSplitMap([8, 8], [1, 1, 1, 1, 1, 1, 1, 1], 1),
    },
  };
  throws(() => planTransfers(pairs, { budget: { maxSegments: 63 } }), PlanBudgetError);
  throws(() => planTransfers(pairs, { budget: { maxPairChecks: 63 } }), PlanBudgetError);
  equal(planTransfers(pairs).parameters.get("w")!.segments.length, 64);
});

Deno.test("coalesceSegments() joins only when both address mappings continue", () => {
  const seg = (s: number, t: number, shape = [1, 4]): TransferSegmentDict => ({
    shape,
    source: [0, s, [4, 1]],
    target: [1, t, [4, 1]],
  });
  const merged = coalesceSegments([seg(8, 4), seg(4, 0), seg(12, 8)], DEFAULT_PLAN_BUDGET);
  deepEqual(merged, [{ shape: [3, 4], source: [0, 4, [4, 1]], target: [1, 0, [4, 1]] }]);
  // Target continues but the source does not: no join.
  deepEqual(coalesceSegments([seg(0, 0), seg(8, 4)], DEFAULT_PLAN_BUDGET).length, 2);
  // The merged plan writes the same elements from the same addresses.
  const before = [seg(0, 0), seg(4, 4), seg(8, 8, [2, 4])];
  deepEqual(attribution(coalesceSegments(before, DEFAULT_PLAN_BUDGET)), attribution(before));
});

Deno.test("planTransfers() plans AutoEP re-placement with replicated experts", () => {
  const source = placementToMap(makePlacement(4, [[0, 1, 2], [1, 2, 3]]), [4, 3, 2]);
  const target = placementToMap(makePlacement(4, [[3], [0, 1], [2], []]), [4, 3, 2]);
  const plans = planTransfers({ w: { source, target } }, { policy: firstHolder });
  const p = plans.parameters.get("w")!;
  equal(p.movedElements, 24);
  deepEqual(p.segments.map((s) => [s.source[0], s.target[0], s.shape[0]]), [
    [1, 0, 1],
    [0, 1, 2],
    [0, 2, 1],
  ]);
});

Deno.test("planTransfers() plans from its own frames, whatever a policy does to the requests", () => {
  const pairs = {
    w: { source: replicatedMap([8, 4], [0, 1]), target: contiguousSplitMap([8, 4], [3, 5], 0) },
  };
  const honest = planTransfers(pairs, { policy: firstHolder }).parameters.get("w")!;
  const vandal: ReplicaPolicy = (requests) =>
    requests.map((r) => {
      const location = r.holders[0].location;
      r.logicalOrigin[0] = 7;
      r.shape[0] = 1;
      return location;
    });
  deepEqual(planTransfers(pairs, { policy: vandal }).parameters.get("w")!, honest);
});
