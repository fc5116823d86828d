/**
 * Helpers shared by this folder's tests: per-element attribution of a plan, plan-file assembly,
 * and seeded random layouts.
 *
 * @module
 */

import {
  contiguousSplitMap,
  forEachAddressPair,
  makePlacement,
  placementToMap,
  replicatedMap,
  rowMajorStrides,
} from "./map.ts";
import type { AffinePiece, ParamAffineMap, RankShard } from "./map.ts";
import type { TransferSegmentDict } from "./plan_transfers.ts";
import type { PlanFile } from "./plan_file.ts";

/** For every target (location, address): the source "location:address" it is copied from. */
export function attribution(segments: readonly TransferSegmentDict[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const s of segments) {
    forEachAddressPair(s.shape, s.target[1], s.target[2], s.source[1], s.source[2], (t, src) => {
      const key = `${s.target[0]}:${t}`;
      if (out.has(key)) throw new Error(`target ${key} written twice`);
      out.set(key, `${s.source[0]}:${src}`);
    });
  }
  return out;
}

/** A one-parameter plan file around raw map dicts and segments. */
export function singlePlanFile(
  sourceMap: unknown,
  targetMap: unknown,
  segments: unknown[],
  extra: Partial<PlanFile> = {},
): PlanFile {
  return {
    schema_version: 1,
    policy: "test",
    source_processes: {},
    target_processes: {},
    parameters: {
      w: {
        element_size: 4,
        source_map: sourceMap as PlanFile["parameters"][string]["source_map"],
        target_map: targetMap as PlanFile["parameters"][string]["target_map"],
        segments: segments as TransferSegmentDict[],
      },
    },
    ...extra,
  };
}

/** Integer in [lo, hi]. */
export function randInt(r: () => number, lo: number, hi: number): number {
  return lo + Math.floor(r() * (hi - lo + 1));
}

/** A random AutoEP placement: every expert held 1..3 times, some ranks possibly empty. */
export function randomPlacementMap(
  r: () => number,
  experts: number,
  ranks: number,
  expertShape: number[],
): ParamAffineMap {
  const byRank: number[][] = Array.from({ length: ranks }, () => []);
  for (let e = 0; e < experts; e++) {
    const copies = ranks > 1 && r() < 0.3 ? randInt(r, 2, Math.min(3, ranks)) : 1;
    const pool = [...Array(ranks).keys()];
    for (let c = 0; c < copies; c++) {
      const k = randInt(r, 0, pool.length - 1);
      byRank[pool[k]].push(e);
      pool.splice(k, 1);
    }
  }
  for (const list of byRank) if (r() < 0.5) list.sort((a, b) => a - b);
  return placementToMap(makePlacement(experts, byRank), [experts, ...expertShape]);
}

/** Random uneven split sizes (zeros allowed) of `n` over `parts`. */
export function randomSizes(r: () => number, n: number, parts: number): number[] {
  const cuts = Array.from({ length: parts - 1 }, () => randInt(r, 0, n)).sort((a, b) => a - b);
  const sizes: number[] = [];
  let prev = 0;
  for (const c of cuts) {
    sizes.push(c - prev);
    prev = c;
  }
  sizes.push(n - prev);
  return sizes;
}

/**
 * A map where a leading block of rows is replicated on every rank and the rest is split by
 * rows with uneven sizes (a bigcode-like fused layout generalised to any rank).
 */
export function partlyReplicatedMap(
  shape: number[],
  replicatedRows: number,
  sizes: number[],
): ParamAffineMap {
  const strides = rowMajorStrides(shape);
  const ranks = sizes.map((_, i) => i);
  const out = new Map<number, RankShard>();
  let start = replicatedRows;
  sizes.forEach((size, rank) => {
    const shardShape = [replicatedRows + size, ...shape.slice(1)];
    const shardStrides = rowMajorStrides(shardShape);
    const pieces: AffinePiece[] = [];
    if (replicatedRows > 0) {
      pieces.push({
        shape: [replicatedRows, ...shape.slice(1)],
        sourceOffset: 0,
        sourceStrides: strides,
        destOffset: 0,
        destStrides: shardStrides,
        locations: ranks,
        scale: 1,
      });
    }
    if (size > 0) {
      pieces.push({
        shape: [size, ...shape.slice(1)],
        sourceOffset: start * strides[0],
        sourceStrides: strides,
        destOffset: replicatedRows * shardStrides[0],
        destStrides: shardStrides,
        locations: [rank],
        scale: 1,
      });
    }
    out.set(rank, { shardShape, pieces });
    start += size;
  });
  return { logicalShape: [...shape], ranks: out };
}

/** A random layout of `shape` over `ranks` ranks of one of several families. */
export function randomMap(r: () => number, shape: number[], ranks: number): ParamAffineMap {
  if (shape.length === 0) return replicatedMap([], [...Array(ranks).keys()]);
  const kind = randInt(r, 0, 3);
  if (kind === 0) return replicatedMap(shape, [...Array(ranks).keys()]);
  if (kind === 1) {
    const dim = randInt(r, 0, shape.length - 1);
    return contiguousSplitMap(shape, randomSizes(r, shape[dim], ranks), dim);
  }
  if (kind === 2 && shape.length >= 1) {
    const rep = randInt(r, 0, shape[0]);
    return partlyReplicatedMap(shape, rep, randomSizes(r, shape[0] - rep, ranks));
  }
  return randomPlacementMap(r, shape[0], ranks, shape.slice(1));
}

export function randomShape(r: () => number): number[] {
  const nd = randInt(r, 0, 3);
  if (nd === 0) return r() < 0.5 ? [] : [randInt(r, 1, 9)];
  return Array.from({ length: nd }, (_, i) => randInt(r, i === 0 ? 1 : 1, i === 0 ? 9 : 4));
}
