import { deepEqual, equal, ok, throws } from "node:assert/strict";
import { AffineError } from "./affine_errors.ts";
import { contiguousSplitMap, replicatedMap } from "./map.ts";
import { planTransfers } from "./plan_transfers.ts";
import type { ReplicaPart, ReplicaRequest } from "./policies.ts";
import { buildPlanFile } from "./plan_file.ts";
import {
  balanced,
  balancedOutcome,
  firstHolder,
  getReplicaPolicy,
  highestHolder,
  localFirstLeastLoaded,
  perRequest,
  REPLICA_POLICY_NAMES,
  replicaPolicies,
} from "./policies.ts";
import { verifyPlan } from "./verify.ts";

function request(
  holders: [number, number?][],
  bytes: number,
  extra: Partial<ReplicaRequest> = {},
): ReplicaRequest {
  return {
    parameter: "w",
    targetLocation: 0,
    logicalOrigin: [0, 0],
    shape: [bytes, 1],
    bytes,
    holders: holders.map(([location, process]) =>
      process === undefined ? { location } : { location, process }
    ),
    ...extra,
  };
}

const ctx = { minSplitBytes: 0 };

Deno.test("firstHolder and highestHolder read the lowest and highest holder", () => {
  const rs = [request([[2], [5], [7]], 4), request([[3]], 4)];
  deepEqual(firstHolder(rs, ctx), [2, 3]);
  deepEqual(highestHolder(rs, ctx), [7, 3]);
});

Deno.test("perRequest() never consults its selector for a single holder", () => {
  const asked: number[] = [];
  const policy = perRequest((r) => (asked.push(r.bytes), r.holders[1].location));
  deepEqual(policy([request([[0], [1]], 8), request([[4]], 9)], ctx), [1, 4]);
  deepEqual(asked, [8]);
});

Deno.test("localFirstLeastLoaded copies locally when it can", () => {
  const rs = [
    request([[0, 0], [1, 1], [2, 1]], 100, { targetProcess: 1 }),
    request([[0, 0], [1, 1], [2, 1]], 100, { targetProcess: 1 }),
  ];
  // Both local holders are in process 1: the lowest local location wins every time.
  deepEqual(localFirstLeastLoaded(rs, ctx), [1, 1]);
});

Deno.test("localFirstLeastLoaded balances load, counting single-holder load", () => {
  const rs = [
    request([[0, 0]], 100, { targetProcess: 9 }), // forced: process 0 has 100
    request([[0, 0], [1, 1]], 10, { targetProcess: 9 }), // process 1 is lighter
    request([[0, 0], [1, 1]], 10, { targetProcess: 9 }), // 100 vs 10: process 1 again
    request([[1, 1], [2, 2]], 5, { targetProcess: 9 }), // 20 vs 0: process 2
    request([[2, 2], [3, 3]], 5, { targetProcess: 9 }), // 5 vs 0: process 3
    request([[3, 3], [2, 2]], 5, { targetProcess: 9 }), // tie 5 vs 5: lowest location (2)
  ];
  deepEqual(localFirstLeastLoaded(rs, ctx), [0, 1, 1, 2, 3, 2]);
});

Deno.test("localFirstLeastLoaded never assumes a local copy without mappings", () => {
  // Without processes, location 1 is not "local" to target location 1.
  const rs = [
    request([[0], [1]], 50, { targetLocation: 1 }),
    request([[0], [1]], 50, { targetLocation: 1 }),
  ];
  deepEqual(localFirstLeastLoaded(rs, ctx), [0, 1]);
  // With only the source mapping, nothing is local either.
  const half = [request([[0, 1], [1, 0]], 50, { targetLocation: 1 })];
  deepEqual(localFirstLeastLoaded(half, ctx), [0]);
});

Deno.test("localFirstLeastLoaded never splits, whatever minSplitBytes says", () => {
  const rs = Array.from({ length: 20 }, (_, i) => request([[0], [1], [2]], 10 + i));
  for (const answer of localFirstLeastLoaded(rs, ctx) as unknown[]) equal(typeof answer, "number");
});

Deno.test("balanced splits one big replicated region evenly across holders", () => {
  const out = balancedOutcome([request([[0, 0], [1, 1], [2, 2], [3, 3]], 400, {
    targetProcess: 9,
  })], ctx);
  equal(out.maxSendLoad, 100);
  equal(out.lowerBound, 100);
  const parts = out.answers[0] as ReplicaPart[];
  deepEqual(parts.map((p) => [p.sourceLocation, p.logicalOrigin[0], p.shape[0]]), [
    [0, 0, 100],
    [1, 100, 100],
    [2, 200, 100],
    [3, 300, 100],
  ]);
});

Deno.test("balanced reaches the optimum where greedy order fails", () => {
  // A on {p1, p2} then B on {p2, p3}, 6 one-byte rows each: the optimum is 4 per process
  // (A: 4 + 2, B: 2 + 4); splitting A evenly first would leave p2 with 3 + 1.5 = 4.5.
  const rs = [request([[1, 1], [2, 2]], 6), request([[2, 2], [3, 3]], 6)];
  const out = balancedOutcome(rs, ctx);
  equal(out.lowerBound, 4);
  equal(out.maxSendLoad, 4);
});

Deno.test("balanced honours minSplitBytes", () => {
  const rs = [request([[0, 0], [1, 1]], 64, { targetProcess: 9 })];
  const split = balancedOutcome(rs, { minSplitBytes: 32 });
  equal((split.answers[0] as ReplicaPart[]).length, 2);
  const whole = balancedOutcome(rs, { minSplitBytes: 33 });
  equal(typeof whole.answers[0], "number");
  equal(whole.maxSendLoad, 64);
  ok(whole.maxSendLoad <= whole.guaranteedBound);
});

Deno.test("balanced reads local copies and counts forced load", () => {
  const rs = [
    request([[0, 0], [1, 1]], 100, { targetProcess: 1 }), // local: process 1 sends nothing
    request([[0, 0]], 30, { targetProcess: 5 }), // forced onto process 0
    request([[0, 0], [1, 1]], 30, { targetProcess: 5 }), // flexible: process 1 is idle
  ];
  const out = balancedOutcome(rs, ctx);
  equal(out.answers[0], 1);
  equal(out.answers[1], 0);
  equal(out.lowerBound, 30);
  equal(out.maxSendLoad, 30);
  deepEqual(out.answers[2], 1);
});

Deno.test("balanced is deterministic", () => {
  const rs = Array.from(
    { length: 30 },
    (_, i) => request([[i % 3], [(i + 1) % 3 + 3], [6]], 8 * (1 + (i * 7) % 5)),
  );
  deepEqual(balanced(rs, ctx), balanced(rs, ctx));
});

Deno.test("balanced lowers the max process load of a plan against the other policies", () => {
  // 16 experts replicated on all 4 source processes, gathered by 2 target processes elsewhere.
  const pairs = {
    w: {
      source: replicatedMap([16, 8], [0, 1, 2, 3]),
      target: contiguousSplitMap([16, 8], [8, 8], 0),
    },
  };
  const opts = {
    sourceProcesses: { 0: 0, 1: 1, 2: 2, 3: 3 },
    targetProcesses: { 0: 4, 1: 5 },
    elementSize: 4,
  };
  const max = (name: string) => {
    const plans = planTransfers(pairs, { ...opts, policy: getReplicaPolicy(name) });
    const verdict = verifyPlan(buildPlanFile(plans, { policy: name, pairs, ...opts }));
    ok(verdict.ok, verdict.error ?? "");
    return verdict.stats!.maxProcessSendBytes;
  };
  equal(max("first_holder"), 512);
  equal(max("local_first_least_loaded"), 256);
  equal(max("balanced"), 128);
});

Deno.test("the policy registry names every policy", () => {
  deepEqual([...REPLICA_POLICY_NAMES].sort(), [
    "balanced",
    "first_holder",
    "highest_holder",
    "local_first_least_loaded",
  ]);
  equal(getReplicaPolicy("balanced"), balanced);
  equal(replicaPolicies.first_holder, firstHolder);
  throws(() => getReplicaPolicy("fastest"), AffineError);
  throws(() => getReplicaPolicy("toString"), /known: first_holder/);
});

Deno.test("balanced splits at most P - 1 requests when holder sets overlap", () => {
  // Types {1,2}, {1,2,3}, {2,3}, {1,3}: their flows could form cycles; the forest removes them.
  const sets: [number, number?][][] = [
    [[1, 1], [2, 2]],
    [[1, 1], [2, 2], [3, 3]],
    [[2, 2], [3, 3]],
    [[1, 1], [3, 3]],
  ];
  const rs = Array.from({ length: 24 }, (_, i) => request(sets[i % 4], 40 + 8 * (i % 5)));
  const out = balancedOutcome(rs, ctx);
  ok(out.splitRequests <= 2, `${out.splitRequests} split requests`);
  ok(out.maxSendLoad <= out.guaranteedBound);
  ok(out.maxSendLoad - out.lowerBound <= 2 * 1, `${out.maxSendLoad} vs ${out.lowerBound}`);
});
