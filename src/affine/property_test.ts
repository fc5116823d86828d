import { equal, ok } from "node:assert/strict";
import { randInt, randomMap, randomShape } from "./_testing.ts";
import { seededRandom } from "../../test/_testing/seeded_random.ts";
import { extract, numelOf } from "./map.ts";
import { planTransfers } from "./plan_transfers.ts";
import type { MapPair } from "./plan_transfers.ts";
import type { ReplicaAnswer, ReplicaPolicy, ReplicaRequest } from "./policies.ts";
import { buildPlanFile } from "./plan_file.ts";
import { balancedOutcome, firstHolder, highestHolder, localFirstLeastLoaded } from "./policies.ts";
import { executeSegments, verifyPlan } from "./verify.ts";

/** A policy that picks random holders and sometimes cuts a region into random axis-0 slabs. */
function randomSplitPolicy(r: () => number, record: Map<number, ReplicaAnswer>): ReplicaPolicy {
  return (requests) =>
    requests.map((q, i) => {
      const pick = () => q.holders[randInt(r, 0, q.holders.length - 1)].location;
      let answer: ReplicaAnswer;
      if (q.shape.length === 0 || q.shape[0] < 2 || r() < 0.4) answer = pick();
      else {
        const cuts = [
          ...new Set(Array.from({ length: randInt(r, 1, 3) }, () => randInt(r, 1, q.shape[0] - 1))),
        ].sort((a, b) => a - b);
        const bounds = [0, ...cuts, q.shape[0]];
        const parts = bounds.slice(1).map((end, k) => ({
          sourceLocation: pick(),
          logicalOrigin: [q.logicalOrigin[0] + bounds[k], ...q.logicalOrigin.slice(1)],
          shape: [end - bounds[k], ...q.shape.slice(1)],
        }));
        answer = r() < 0.5 ? parts.reverse() : parts;
      }
      record.set(i, answer);
      return answer;
    });
}

function processMapping(r: () => number, ranks: number): Record<string, number> | undefined {
  if (r() < 0.3) return undefined;
  const processes = randInt(r, 1, ranks);
  return Object.fromEntries(
    Array.from({ length: ranks }, (_, k) => [String(k), randInt(r, 0, processes - 1)]),
  );
}

/**
 * Executes a plan with every source shard tagged by its location, so each target element
 * reveals which location it was read from as well as which logical element it is.
 */
function sourcesOf(
  pairs: Map<string, MapPair>,
  name: string,
  tag: number,
): { full: Float64Array; shards: Map<number, Float64Array> } {
  const map = pairs.get(name)!.source;
  const n = numelOf(map.logicalShape);
  const full = new Float64Array(n).map((_, i) => i);
  const shards = new Map<number, Float64Array>();
  for (const rank of map.ranks.keys()) {
    shards.set(rank, extract(map, full, rank).map((v) => v + tag * rank));
  }
  return { full, shards };
}

const SEEDS = 400;

Deno.test(`planTransfers() plans verify and match extract() over ${SEEDS} random syncs`, () => {
  let splitSeen = 0, localSeen = 0, balancedSplits = 0;
  for (let seed = 0; seed < SEEDS; seed++) {
    const r = seededRandom(seed * 7919 + 1);
    const sourceRanks = randInt(r, 1, 5), targetRanks = randInt(r, 1, 6);
    const pairs = new Map<string, MapPair>();
    const count = randInt(r, 1, 4);
    for (let p = 0; p < count; p++) {
      const shape = randomShape(r);
      pairs.set(`p${p}`, {
        source: randomMap(r, shape, sourceRanks),
        target: randomMap(r, shape, targetRanks),
      });
    }
    const sourceProcesses = processMapping(r, sourceRanks);
    const targetProcesses = sourceProcesses ? processMapping(r, targetRanks) : undefined;
    const choice = randInt(r, 0, 4);
    const record = new Map<number, ReplicaAnswer>();
    let captured: readonly ReplicaRequest[] = [];
    const minSplitBytes = choice === 4 && r() < 0.5 ? 4 * randInt(r, 1, 24) : 0;
    const policies: ReplicaPolicy[] = [
      firstHolder,
      highestHolder,
      localFirstLeastLoaded,
      randomSplitPolicy(r, record),
      (requests, context) => {
        captured = requests;
        return balancedOutcome(requests, context).answers;
      },
    ];
    const elementSize = Object.fromEntries([...pairs.keys()].map((k) => [k, randInt(r, 1, 8)]));
    const plans = planTransfers(pairs, {
      policy: policies[choice],
      sourceProcesses,
      targetProcesses: sourceProcesses ? targetProcesses : undefined,
      elementSize,
      minSplitBytes,
    });
    splitSeen += plans.splitRequests;
    const file = JSON.parse(JSON.stringify(buildPlanFile(plans, {
      policy: `policy${choice}`,
      pairs,
      sourceProcesses,
      targetProcesses,
    })));
    const verdict = verifyPlan(file, { execute: true });
    equal(verdict.error, null, `seed ${seed}`);
    localSeen += verdict.stats!.localBytes;
    // Every element arrives, from the location the policy chose for it.
    const requests = [...plans.parameters.values()].reduce((s, p) => s + p.statistics.requests, 0);
    equal(requests, plans.requests);
    for (const name of plans.parameters.keys()) {
      const tag = 1 << 20;
      const { full, shards } = sourcesOf(pairs, name, tag);
      const got = executeSegments(file.parameters[name], shards);
      const target = pairs.get(name)!.target;
      for (const [rank, shard] of got) {
        const want = extract(target, full, rank);
        for (let a = 0; a < want.length; a++) {
          equal(shard[a] % tag, want[a], `seed ${seed} ${name} target ${rank} address ${a}`);
        }
      }
    }
    if (choice === 4) {
      const outcome = balancedOutcome(captured, { minSplitBytes });
      ok(outcome.maxSendLoad >= outcome.lowerBound, `seed ${seed}`);
      ok(outcome.maxSendLoad <= outcome.guaranteedBound, `seed ${seed}`);
      equal(verdict.stats!.maxProcessSendBytes, outcome.maxSendLoad, `seed ${seed}`);
      // The forest of quotas allows at most P - 1 cuts, hence at most P - 1 split requests.
      ok(outcome.splitRequests <= Math.max(0, outcome.sendLoad.size - 1), `seed ${seed}`);
      balancedSplits += outcome.splitRequests;
    }
  }
  ok(splitSeen > 0, "some plans split regions");
  ok(localSeen > 0, "some plans copy locally");
  ok(balancedSplits > 0, "balanced splits some regions");
});

Deno.test("planTransfers() reads each part from the holder the policy named", () => {
  for (let seed = 0; seed < 60; seed++) {
    const r = seededRandom(seed + 101);
    const shape = [randInt(r, 2, 12), randInt(r, 1, 3)];
    const source = randomMap(r, shape, randInt(r, 2, 4));
    const target = randomMap(r, shape, randInt(r, 1, 4));
    const record = new Map<number, ReplicaAnswer>();
    const captured: ReplicaRequest[] = [];
    const policy = randomSplitPolicy(r, record);
    const plans = planTransfers({ w: { source, target } }, {
      policy: (requests, ctx) => {
        captured.push(...requests);
        return policy(requests, ctx) as ReplicaAnswer[];
      },
    });
    const tag = 1 << 20;
    const pairs = new Map([["w", { source, target }]]);
    const { shards } = sourcesOf(pairs, "w", tag);
    const file = buildPlanFile(plans, { policy: "random", pairs });
    const got = executeSegments(file.parameters.w, shards);
    const n = numelOf(shape);
    const byTarget = new Map<number, Float64Array>();
    for (const rank of target.ranks.keys()) {
      byTarget.set(rank, extract(target, new Float64Array(n).map((_, i) => i), rank));
    }
    captured.forEach((q, i) => {
      const answer = record.get(i)!;
      const parts = typeof answer === "number"
        ? [{ sourceLocation: answer, logicalOrigin: q.logicalOrigin, shape: q.shape }]
        : answer;
      const logical = byTarget.get(q.targetLocation)!;
      const shard = got.get(q.targetLocation)!;
      for (const part of parts) {
        const rows = [part.logicalOrigin[0], part.logicalOrigin[0] + part.shape[0]];
        const cols = [part.logicalOrigin[1], part.logicalOrigin[1] + part.shape[1]];
        for (let a = 0; a < logical.length; a++) {
          const row = Math.floor(logical[a] / shape[1]), col = logical[a] % shape[1];
          if (row >= rows[0] && row < rows[1] && col >= cols[0] && col < cols[1]) {
            equal(Math.floor(shard[a] / tag), part.sourceLocation, `seed ${seed}`);
          }
        }
      }
    });
  }
});
