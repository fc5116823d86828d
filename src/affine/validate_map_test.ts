import { equal, throws } from "node:assert/strict";
import { InvalidMapError, PlanBudgetError, UnsupportedLayoutError } from "./affine_errors.ts";
import {
  contiguousSplitMap,
  makePlacement,
  mapFromDict,
  placementToMap,
  replicatedMap,
} from "./map.ts";
import type { ParamAffineMap } from "./map.ts";
import { normalizeMap, validateMapForPlanning } from "./validate_map.ts";

const clone = (m: ParamAffineMap): ParamAffineMap => structuredClone(m);

Deno.test("normalizeMap() accepts builder maps, including replicated and empty ranks", () => {
  equal(normalizeMap(contiguousSplitMap([11, 8], [6, 0, 5], 0), "m").length, 2);
  equal(normalizeMap(contiguousSplitMap([4, 8], [2, 2, 2, 2], 1), "m").length, 4);
  equal(normalizeMap(replicatedMap([16], [0, 1, 2]), "m").length, 3);
  const ep = placementToMap(makePlacement(4, [[0, 1, 2], [1, 2, 3], []]), [4, 3, 2]);
  equal(validateMapForPlanning(ep).length, 6);
});

Deno.test("normalizeMap() refuses scaled pieces and non-row-major strides as unsupported", () => {
  const scaled = clone(replicatedMap([4], [0, 1]));
  scaled.ranks.get(0)!.pieces[0].scale = 0.5;
  throws(() => normalizeMap(scaled, "m"), UnsupportedLayoutError);
  const permuted = clone(contiguousSplitMap([4, 4], [4], 0));
  permuted.ranks.get(0)!.pieces[0].destStrides = [1, 4];
  throws(() => normalizeMap(permuted, "m"), /dest axis 0 strides 1, expected 4/);
  const mismatch = clone(contiguousSplitMap([4, 4], [4], 0));
  mismatch.ranks.get(0)!.shardShape = [16];
  throws(() => normalizeMap(mismatch, "m"), UnsupportedLayoutError);
});

Deno.test("normalizeMap() proves each shard is tiled by address, not by count", () => {
  // Two pieces of rank 0 cover rows 0-1 and 2-3 of F but both land on shard rows 0-1; the
  // numels still sum to a 4-row shard.
  const m = mapFromDict({
    logical_shape: [4, 2],
    ranks: {
      "0": {
        shard_shape: [4, 2],
        pieces: [
          { shape: [2, 2], source: [0, [2, 1]], dest: [0, [2, 1]], locations: [0] },
          { shape: [2, 2], source: [4, [2, 1]], dest: [2, [2, 1]], locations: [0] },
        ],
      },
    },
  });
  throws(() => normalizeMap(m, "m"), /both occupy part of the same shard addresses/);
});

Deno.test("normalizeMap() refuses inhomogeneous holders and overlapping logical pieces", () => {
  const liar = clone(contiguousSplitMap([4, 2], [2, 2], 0));
  liar.ranks.get(0)!.pieces[0].locations = [0, 1];
  throws(() => normalizeMap(liar, "m"), /rank 1 does not hold all of/);
  const shy = clone(replicatedMap([4], [0, 1]));
  shy.ranks.get(0)!.pieces[0].locations = [0];
  throws(() => normalizeMap(shy, "m"), /declares \[0\], held by \[0, 1\]/);
  const twice = mapFromDict({
    logical_shape: [4],
    ranks: {
      "0": {
        shard_shape: [4],
        pieces: [
          { shape: [2], source: [0, [1]], dest: [0, [1]], locations: [0] },
          { shape: [2], source: [1, [1]], dest: [2, [1]], locations: [0] },
        ],
      },
    },
  });
  throws(() => normalizeMap(twice, "m"), /holds overlapping logical pieces/);
});

Deno.test("normalizeMap() refuses bounds and offset errors as invalid maps", () => {
  const outside = clone(contiguousSplitMap([4, 2], [4], 0));
  outside.ranks.get(0)!.pieces[0].sourceOffset = 2;
  throws(() => normalizeMap(outside, "m"), InvalidMapError);
  const offGrid = clone(contiguousSplitMap([4, 2], [2, 2], 0));
  offGrid.ranks.get(1)!.pieces[0].sourceOffset = 5;
  offGrid.ranks.get(1)!.pieces[0].shape = [1, 2];
  throws(() => normalizeMap(offGrid, "m"), InvalidMapError);
  const empty = clone(contiguousSplitMap([4], [2, 2], 0));
  empty.ranks.get(1)!.pieces = [];
  throws(() => normalizeMap(empty, "m"), /declares a nonempty shard but has no pieces/);
});

Deno.test("validateMapForPlanning() refuses a map that leaves part of F uncovered", () => {
  const gap = clone(contiguousSplitMap([6], [2, 2, 2], 0));
  gap.ranks.delete(2);
  throws(() => validateMapForPlanning(gap, "m"), /do not cover the full logical parameter/);
});

Deno.test("normalizeMap() enforces its budget with PlanBudgetError", () => {
  const many = contiguousSplitMap([64], new Array(64).fill(1), 0);
  throws(
    () => normalizeMap(many, "m", { ...budgetDefaults(), maxPiecesPerMap: 63 }),
    PlanBudgetError,
  );
  // DeepSpeed bounds the address checks of one rank (its pieces squared), not all pieces squared.
  equal(normalizeMap(many, "m", { ...budgetDefaults(), maxPairChecks: 4095 }).length, 64);
  const oneRank = placementToMap(makePlacement(64, [[...Array(64).keys()].reverse()]), [64]);
  throws(
    () => normalizeMap(oneRank, "m", { ...budgetDefaults(), maxPairChecks: 4095 }),
    /rank 0 holds 64 pieces, over the budget for address checks/,
  );
  equal(normalizeMap(oneRank, "m", { ...budgetDefaults(), maxPairChecks: 4096 }).length, 64);
});

function budgetDefaults() {
  return {
    maxNdim: 8,
    maxPiecesPerMap: 4096,
    maxPairChecks: 1 << 18,
    maxSegments: 1 << 16,
    maxMergePasses: 8,
    maxPlanBytes: 1 << 24,
    maxMergeChecks: 1 << 18,
  };
}
