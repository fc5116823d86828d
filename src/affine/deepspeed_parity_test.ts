import { deepEqual, equal, ok } from "node:assert/strict";
import { referenceCoalesce, referencePlan, ReferenceRefusal } from "./_deepspeed_reference.ts";
import { randInt, randomMap, randomShape } from "./_testing.ts";
import { seededRandom } from "../../test/_testing/seeded_random.ts";
import { PlanBudgetError, UnsupportedLayoutError } from "./affine_errors.ts";
import { numelOf, rowMajorStrides } from "./map.ts";
import type { ParamAffineMap } from "./map.ts";
import { coalesceSegments, planBytesOf, planTransfer, planTransfers } from "./plan_transfers.ts";
import type { TransferSegmentDict } from "./plan_transfers.ts";
import { firstHolder, highestHolder } from "./policies.ts";
import { DEFAULT_PLAN_BUDGET, resolveBudget } from "./validate_map.ts";
import type { PlanBudget } from "./validate_map.ts";

/** Cuts `[origin, origin + extent)` into random guillotine tiles along every axis in turn. */
function tiles(r: () => number, origin: number[], extent: number[], axis = 0): number[][][] {
  if (axis === extent.length) return [[origin, extent]];
  const out: number[][][] = [];
  let at = 0;
  while (at < extent[axis]) {
    const size = randInt(r, 1, Math.max(1, Math.min(3, extent[axis] - at)));
    const o = [...origin], e = [...extent];
    o[axis] = origin[axis] + at;
    e[axis] = size;
    out.push(...tiles(r, o, e, axis + 1));
    at += size;
  }
  return out;
}

/**
 * Random raw segments into one target shard: tiles of the shard, each read from one of a few
 * source ranks, mostly at the matching address (so neighbours continue and join, also across
 * row ends) and sometimes elsewhere (so they do not), in random order.
 */
function randomSegments(r: () => number): TransferSegmentDict[] {
  const nd = randInt(r, 1, 3);
  const shard = Array.from({ length: nd }, () => randInt(r, 1, [80, 14, 7][nd - 1]));
  const strides = rowMajorStrides(shard);
  const wide = [...shard];
  wide[nd - 1] += 1;
  const wideStrides = rowMajorStrides(wide);
  const sources = r() < 0.4 ? 1 : randInt(r, 2, 3);
  const out: TransferSegmentDict[] = [];
  for (const [origin, extent] of tiles(r, shard.map(() => 0), shard)) {
    const rank = randInt(r, 0, sources - 1);
    const target = origin.reduce((a, c, i) => a + c * strides[i], 0);
    const sourceStrides = rank === 2 ? wideStrides : strides;
    let source = origin.reduce((a, c, i) => a + c * sourceStrides[i], 0);
    if (r() < 0.15) source += randInt(r, 1, 5);
    out.push({
      shape: extent,
      source: [rank, source, sourceStrides],
      target: [0, target, strides],
    });
  }
  for (let i = out.length - 1; i > 0; i--) {
    const j = randInt(r, 0, i);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

Deno.test("coalesceSegments() joins exactly as DeepSpeed's first-fit _coalesce (1500 cases)", () => {
  let joined = 0, large = 0;
  for (let seed = 1; seed <= 1500; seed++) {
    const r = seededRandom(seed);
    const raw = randomSegments(r);
    const passes = randInt(r, 1, 8);
    const budget = { ...DEFAULT_PLAN_BUDGET, maxMergePasses: passes };
    const before = structuredClone(raw);
    const ours = coalesceSegments(raw, budget);
    deepEqual(ours, referenceCoalesce(raw, passes), `seed ${seed}`);
    deepEqual(raw, before, "the input is left alone");
    if (ours.length < raw.length) joined++;
    if (raw.length > 2 * 16) large++;
  }
  ok(joined > 1000, `only ${joined} cases joined anything`);
  ok(large > 200, `only ${large} cases had large groups`);
});

function planOurs(
  source: ParamAffineMap,
  target: ParamAffineMap,
  budget: PlanBudget,
  highest: boolean,
): TransferSegmentDict[] | string {
  try {
    return planTransfers({ w: { source, target } }, {
      budget,
      policy: highest ? highestHolder : firstHolder,
    }).parameters.get("w")!.segments;
  } catch (e) {
    if (e instanceof PlanBudgetError) return "budget";
    if (e instanceof UnsupportedLayoutError) return "layout";
    throw e;
  }
}

function planReference(
  source: ParamAffineMap,
  target: ParamAffineMap,
  budget: PlanBudget,
  highest: boolean,
): TransferSegmentDict[] | string {
  try {
    return referencePlan(target, source, budget, highest ? (h) => Math.max(...h) : undefined);
  } catch (e) {
    if (e instanceof ReferenceRefusal) return e.category;
    throw e;
  }
}

function randomPair(r: () => number): { source: ParamAffineMap; target: ParamAffineMap } {
  const shape = randomShape(r);
  return {
    source: randomMap(r, shape, randInt(r, 1, 5)),
    target: randomMap(r, shape, randInt(r, 1, 5)),
  };
}

Deno.test("planTransfers() plans random layouts segment for segment as DeepSpeed does (600 cases)", () => {
  for (let seed = 1; seed <= 600; seed++) {
    const r = seededRandom(seed * 7919);
    const { source, target } = randomPair(r);
    const budget = resolveBudget({ maxMergePasses: randInt(r, 1, 8) });
    for (const highest of [false, true]) {
      const ours = planOurs(source, target, budget, highest);
      deepEqual(ours, planReference(source, target, budget, highest), `seed ${seed}`);
    }
    const single = planTransfer(target, source, { budget }).segments;
    deepEqual(single, planReference(source, target, budget, false), `seed ${seed}`);
  }
});

Deno.test("random budgets refuse exactly what DeepSpeed's refuse, in the same category (1500 cases)", () => {
  const outcomes = new Map<string, number>();
  for (let seed = 1; seed <= 1500; seed++) {
    const r = seededRandom(seed * 104729);
    const { source, target } = randomPair(r);
    const nd = source.logicalShape.length;
    const pieces = [source, target].map((m) =>
      [...m.ranks.values()].reduce(
        (n, s) => n + s.pieces.filter((p) => numelOf(p.shape) > 0).length,
        0,
      )
    );
    const budget: PlanBudget = {
      maxNdim: r() < 0.1 ? Math.max(0, nd - 1) : 8,
      maxPiecesPerMap: r() < 0.2 ? randInt(r, 0, Math.max(...pieces)) : 4096,
      maxPairChecks: r() < 0.5 ? randInt(r, 1, 60) : 1 << 18,
      maxSegments: r() < 0.3 ? randInt(r, 1, 20) : 1 << 16,
      maxMergePasses: randInt(r, 1, 8),
      maxPlanBytes: r() < 0.3 ? randInt(r, 2, 1500) : 1 << 24,
      maxMergeChecks: Number.POSITIVE_INFINITY,
    };
    const ours = planOurs(source, target, budget, false);
    const reference = planReference(source, target, budget, false);
    deepEqual(ours, reference, `seed ${seed}`);
    const key = typeof ours === "string" ? ours : "planned";
    outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
  }
  ok((outcomes.get("budget") ?? 0) > 300, JSON.stringify([...outcomes]));
  ok((outcomes.get("planned") ?? 0) > 300, JSON.stringify([...outcomes]));
  ok((outcomes.get("layout") ?? 0) > 20, JSON.stringify([...outcomes]));
});

Deno.test("planBytesOf() counts the compact JSON of the segment list without writing it", () => {
  for (let seed = 1; seed <= 200; seed++) {
    const segments = randomSegments(seededRandom(seed)).map((s) => ({
      ...s,
      source: [
        s.source[0] * 1000,
        s.source[1] * 12345,
        s.source[2],
      ] as TransferSegmentDict["source"],
    }));
    equal(planBytesOf(segments), JSON.stringify(segments).length);
  }
  equal(planBytesOf([]), 2);
});
