/**
 * The default budget against DeepSpeed's default `PlanBudget()` (`affine_transfer.py` at
 * `dc598334`), one limit at a time, at its boundary: the last accepted map and the first refused
 * one, refused in DeepSpeed's category (budget: `PlanBudgetError`; `max_ndim`:
 * `UnsupportedLayoutError`). Each case is also run through the naive DeepSpeed model.
 */

import { deepEqual, equal, throws } from "node:assert/strict";
import { referencePlan, ReferenceRefusal } from "./_deepspeed_reference.ts";
import { PlanBudgetError, UnsupportedLayoutError } from "./affine_errors.ts";
import {
  contiguousSplitMap,
  makePlacement,
  mapFromDict,
  placementToMap,
  replicatedMap,
} from "./map.ts";
import type { ParamAffineMap } from "./map.ts";
import { planTransfers } from "./plan_transfers.ts";
import type { PlanBudget } from "./validate_map.ts";
import { DEFAULT_PLAN_BUDGET } from "./validate_map.ts";

function plan(source: ParamAffineMap, target: ParamAffineMap, budget?: Partial<PlanBudget>) {
  return planTransfers({ w: { source, target } }, { budget }).parameters.get("w")!;
}

function deepspeed(source: ParamAffineMap, target: ParamAffineMap): string {
  try {
    referencePlan(target, source, DEFAULT_PLAN_BUDGET);
    return "planned";
  } catch (e) {
    if (e instanceof ReferenceRefusal) return `${e.category}: ${e.message}`;
    throw e;
  }
}

function accepted(source: ParamAffineMap, target: ParamAffineMap): void {
  equal(deepspeed(source, target), "planned");
  plan(source, target);
}

function refused(
  source: ParamAffineMap,
  target: ParamAffineMap,
  expected: string,
  pattern: RegExp,
): void {
  equal(deepspeed(source, target), expected);
  const category = expected.startsWith("budget") ? PlanBudgetError : UnsupportedLayoutError;
  throws(() => plan(source, target), (e: unknown) => {
    equal((e as Error).constructor, category);
    return pattern.test((e as Error).message);
  });
}

/** Experts `e` with `e % ranks == r` on rank r: `experts / ranks` pieces per rank. */
function strided(experts: number, ranks: number, row = [1]): ParamAffineMap {
  return placementToMap(
    makePlacement(
      experts,
      Array.from(
        { length: ranks },
        (_, r) => Array.from({ length: experts / ranks }, (_, i) => i * ranks + r),
      ),
    ),
    [experts, ...row],
  );
}

/** One piece per rank, `sizes[r]` rows each. */
function rows(n: number, parts: number, row = [1]): ParamAffineMap {
  const sizes = Array.from(
    { length: parts },
    (_, r) => Math.floor(n / parts) + (r < n % parts ? 1 : 0),
  );
  return contiguousSplitMap([n, ...row], sizes, 0);
}

Deno.test("the default budget is DeepSpeed's PlanBudget(), merge checks unlimited", () => {
  deepEqual({ ...DEFAULT_PLAN_BUDGET }, {
    maxNdim: 8,
    maxPiecesPerMap: 4096,
    maxPairChecks: 262144,
    maxSegments: 65536,
    maxMergePasses: 8,
    maxPlanBytes: 16777216,
    maxMergeChecks: Number.POSITIVE_INFINITY,
  });
});

Deno.test("budget parity: the issue's 64 contiguous → 1024 strided target pieces are planned", () => {
  // 64 × 1024 = 65536 pair checks; the target's 1024 pieces squared are no DeepSpeed limit.
  const source = rows(1024, 64), target = strided(1024, 64);
  accepted(source, target);
  equal(plan(source, target).segments.length, 1024);
});

Deno.test("budget parity: max_ndim refuses a 9-axis parameter as an unsupported layout", () => {
  const shape = (nd: number) => new Array(nd).fill(1);
  accepted(replicatedMap(shape(8), [0]), replicatedMap(shape(8), [0, 1]));
  refused(
    replicatedMap(shape(9), [0]),
    replicatedMap(shape(9), [0, 1]),
    "layout: max_ndim",
    /9 axes exceeds maxNdim 8/,
  );
});

Deno.test("budget parity: max_pieces_per_map counts non-empty pieces, 4096 pass", () => {
  // Target: 64 ranks × 64 strided pieces = 4096 (each rank's 64² = 4096 address checks).
  accepted(replicatedMap([4096, 1], [0]), strided(4096, 64));
  refused(
    replicatedMap([4160, 1], [0]),
    strided(4160, 65),
    "budget: pieces",
    /4160 pieces exceeds maxPiecesPerMap 4096/,
  );
  // Empty pieces do not count: 4096 real pieces plus an empty one still plan.
  const withEmpty = strided(4096, 64);
  const first = withEmpty.ranks.get(0)!.pieces[0];
  withEmpty.ranks.get(0)!.pieces.push({ ...first, shape: [0, 1] });
  accepted(replicatedMap([4096, 1], [0]), withEmpty);
});

Deno.test("budget parity: max_pair_checks bounds one rank's pieces squared (512 pass)", () => {
  accepted(replicatedMap([1024, 1], [0]), strided(1024, 2)); // 512² = 262144
  refused(
    replicatedMap([1026, 1], [0]),
    strided(1026, 2),
    "budget: rank pieces",
    /rank 0 holds 513 pieces, over the budget for address checks/,
  );
});

Deno.test("budget parity: max_pair_checks bounds distinct source regions squared (512 pass)", () => {
  const one = replicatedMap([512, 1], [0]);
  // 512 ranks of one piece each: 512 regions, 512 × 1 pairs with one target piece.
  accepted(rows(512, 512), one);
  refused(
    rows(513, 513),
    replicatedMap([513, 1], [0]),
    "budget: source regions",
    /513 source regions would take 263169 checks, over maxPairChecks 262144/,
  );
});

Deno.test("budget parity: max_pair_checks bounds source regions × target pieces", () => {
  accepted(rows(4096, 64), rows(4096, 4096)); // 64 × 4096 = 262144
  refused(
    rows(4096, 65),
    rows(4096, 4096),
    "budget: pair checks",
    /266240 candidate pairs exceeds maxPairChecks 262144/,
  );
});

Deno.test("budget parity: max_segments refuses a 65537th segment after coalescing", () => {
  // Rows from 16 source ranks, columns to 4096 target ranks: 16 × 4096 one-element segments.
  const cols = (n: number) => contiguousSplitMap([n, 4096], new Array(4096).fill(1), 1);
  const accept = plan(rows(16, 16, [4096]), cols(16));
  equal(accept.segments.length, 65536);
  equal(deepspeed(rows(16, 16, [4096]), cols(16)), "planned");
  refused(
    rows(17, 17, [4096]),
    cols(17),
    "budget: segments",
    /69632 segments exceeds maxSegments 65536/,
  );
});

Deno.test("budget parity: max_plan_bytes counts the segment list's compact JSON", () => {
  const source = rows(48, 2, [8]), target = contiguousSplitMap([48, 8], [2, 2, 2, 2], 1);
  const p = plan(source, target);
  const bytes = JSON.stringify(p.segments).length;
  equal(p.statistics.planBytes, bytes);
  plan(source, target, { maxPlanBytes: bytes });
  throws(
    () => plan(source, target, { maxPlanBytes: bytes - 1 }),
    new RegExp(`plan metadata is ${bytes} bytes, over maxPlanBytes ${bytes - 1}`),
  );
  throws(
    () => referencePlan(target, source, { ...DEFAULT_PLAN_BUDGET, maxPlanBytes: bytes - 1 }),
    ReferenceRefusal,
  );
});

Deno.test("budget parity: max_merge_passes limits joining, never refuses", () => {
  // F is [2, 3]. Source rank 0 holds cells (0,0), (0,1), (1,0), (1,1) as four pieces plus
  // column 2; target rank 0 takes columns 0-1, rank 1 column 2. Pass 1 joins the cells into two
  // rows, pass 2 joins the rows.
  const cell = (row: number, col: number) => ({
    shape: [1, 1],
    source: [row * 3 + col, [3, 1]],
    dest: [row * 3 + col, [3, 1]],
    locations: [0],
  });
  const source = mapFromDict({
    logical_shape: [2, 3],
    ranks: {
      "0": {
        shard_shape: [2, 3],
        pieces: [cell(0, 0), cell(0, 1), cell(1, 0), cell(1, 1), {
          shape: [2, 1],
          source: [2, [3, 1]],
          dest: [2, [3, 1]],
          locations: [0],
        }],
      },
    },
  });
  const target = contiguousSplitMap([2, 3], [2, 1], 1);
  const counts = [1, 2, 8].map((passes) => {
    const ours = plan(source, target, { maxMergePasses: passes }).segments;
    const budget = { ...DEFAULT_PLAN_BUDGET, maxMergePasses: passes };
    deepEqual(ours, referencePlan(target, source, budget));
    return ours.length;
  });
  deepEqual(counts, [3, 2, 2]);
});

Deno.test("maxMergeChecks is off by default and refuses with PlanBudgetError when set", () => {
  // 64 pieces of one source rank, in reverse order, to one target rank: 64 segments of one
  // group whose target addresses continue but whose source addresses do not.
  const source = placementToMap(makePlacement(64, [[...Array(64).keys()].reverse()]), [64, 2]);
  const target = replicatedMap([64, 2], [0]);
  equal(plan(source, target).segments.length, 64);
  throws(() => plan(source, target, { maxMergeChecks: 3 }), /merge checks exceed maxMergeChecks 3/);
});
