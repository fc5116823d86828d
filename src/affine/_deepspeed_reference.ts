/**
 * Test oracle: a deliberately naive model of DeepSpeed's `plan_transfer`
 * (`deepspeed/checkpoint/affine_transfer.py` at `dc598334`, the planner behind the test vectors),
 * written from its documented behaviour with every all-pairs loop left in place: budget counts
 * in DeepSpeed's order, region grouping, intersections per target in (rank, origin, extent)
 * order, the lowest holder or a selector's pick, and first-fit coalescing (`_coalesce`/`_merge`).
 * Only what the tests compare is modelled; maps are assumed valid apart from budget limits.
 *
 * Used only by tests, to check the fast planner segment for segment and its budget refusals
 * category for category on layouts the 14 recorded vectors do not cover.
 *
 * @module
 */

import { AffineError } from "./affine_errors.ts";
import type { ParamAffineMap } from "./map.ts";
import { numelOf, rowMajorStrides } from "./map.ts";
import type { TransferSegmentDict } from "./plan_transfers.ts";
import type { PlanBudget } from "./validate_map.ts";

/** How the reference refused: DeepSpeed's budget error or its unsupported-layout error. */
export class ReferenceRefusal extends AffineError {
  /** `budget` for DeepSpeed's `AffineTransferError` budget refusals, `layout` for max_ndim. */
  constructor(readonly category: "budget" | "layout", message: string) {
    super(message);
  }
}

interface Frame {
  rank: number;
  origin: number[];
  extent: number[];
  offset: number;
  strides: number[];
}

function coordinate(offset: number, strides: number[]): number[] {
  const out: number[] = [];
  let rest = offset;
  for (const s of strides) {
    out.push(Math.floor(rest / s));
    rest %= s;
  }
  return out;
}

function frames(map: ParamAffineMap, budget: PlanBudget): Frame[] {
  if (map.logicalShape.length > budget.maxNdim) throw new ReferenceRefusal("layout", "max_ndim");
  const logical = rowMajorStrides(map.logicalShape);
  const out: Frame[] = [];
  for (const [rank, shard] of [...map.ranks].sort((a, b) => a[0] - b[0])) {
    if (numelOf(shard.shardShape) === 0) continue;
    const strides = rowMajorStrides(shard.shardShape);
    for (const p of shard.pieces) {
      if (numelOf(p.shape) === 0) continue;
      out.push({
        rank,
        origin: coordinate(p.sourceOffset, logical),
        extent: [...p.shape],
        offset: p.destOffset,
        strides,
      });
    }
  }
  if (out.length > budget.maxPiecesPerMap) throw new ReferenceRefusal("budget", "pieces");
  const byRank = new Map<number, number>();
  for (const f of out) byRank.set(f.rank, (byRank.get(f.rank) ?? 0) + 1);
  for (const n of byRank.values()) {
    if (n * n > budget.maxPairChecks) throw new ReferenceRefusal("budget", "rank pieces");
  }
  return out;
}

function lexicographic(a: number[], b: number[]): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}

function intersect(a: Frame, origin: number[], extent: number[]) {
  const o: number[] = [], e: number[] = [];
  for (let i = 0; i < origin.length; i++) {
    const low = Math.max(a.origin[i], origin[i]);
    const high = Math.min(a.origin[i] + a.extent[i], origin[i] + extent[i]);
    o.push(low);
    e.push(Math.max(0, high - low));
  }
  return { origin: o, extent: e };
}

function address(f: Frame, origin: number[]): number {
  let a = f.offset;
  for (let i = 0; i < origin.length; i++) a += (origin[i] - f.origin[i]) * f.strides[i];
  return a;
}

/** DeepSpeed `_merge(one, other)`: the joined segment, or null. */
function merge(one: TransferSegmentDict, other: TransferSegmentDict): TransferSegmentDict | null {
  const nd = one.shape.length;
  for (let axis = 0; axis < nd; axis++) {
    let same = true;
    for (let k = 0; k < nd; k++) if (k !== axis && one.shape[k] !== other.shape[k]) same = false;
    if (!same) continue;
    for (const [first, second] of [[one, other], [other, one]]) {
      if (first.source[1] + first.shape[axis] * first.source[2][axis] !== second.source[1]) {
        continue;
      }
      if (first.target[1] + first.shape[axis] * first.target[2][axis] !== second.target[1]) {
        continue;
      }
      const shape = [...first.shape];
      shape[axis] += second.shape[axis];
      return {
        shape,
        source: [first.source[0], first.source[1], first.source[2]],
        target: [first.target[0], first.target[1], first.target[2]],
      };
    }
  }
  return null;
}

/** DeepSpeed `_coalesce`: first-fit merging per group, in passes, then the final sort. */
export function referenceCoalesce(
  segments: readonly TransferSegmentDict[],
  maxMergePasses: number,
): TransferSegmentDict[] {
  const groups = new Map<string, TransferSegmentDict[]>();
  for (const s of segments) {
    const key = JSON.stringify([s.source[0], s.target[0], s.source[2], s.target[2]]);
    groups.set(key, [...(groups.get(key) ?? []), s]);
  }
  const folded: TransferSegmentDict[] = [];
  for (const group of groups.values()) {
    let merged = [...group].sort((a, b) =>
      a.target[1] - b.target[1] || a.source[1] - b.source[1] || lexicographic(a.shape, b.shape)
    );
    for (let pass = 0; pass < maxMergePasses; pass++) {
      const remaining: TransferSegmentDict[] = [];
      let joined = false;
      for (const segment of merged) {
        let placed = false;
        for (let i = 0; i < remaining.length; i++) {
          const candidate = merge(remaining[i], segment);
          if (candidate) {
            remaining[i] = candidate;
            joined = placed = true;
            break;
          }
        }
        if (!placed) remaining.push(segment);
      }
      merged = remaining;
      if (!joined) break;
    }
    folded.push(...merged);
  }
  return folded.sort((a, b) =>
    a.target[0] - b.target[0] || a.target[1] - b.target[1] || a.source[0] - b.source[0] ||
    a.source[1] - b.source[1] || lexicographic(a.shape, b.shape) ||
    lexicographic(a.source[2], b.source[2]) || lexicographic(a.target[2], b.target[2])
  );
}

/**
 * DeepSpeed's `plan_transfer(target, source, limits, replica_selector=)` on valid maps: the
 * segments, or a {@link ReferenceRefusal} naming the category of the limit that refused.
 */
export function referencePlan(
  target: ParamAffineMap,
  source: ParamAffineMap,
  budget: PlanBudget,
  selector?: (holders: number[]) => number,
): TransferSegmentDict[] {
  const sourceFrames = frames(source, budget);
  const byBox = new Map<string, Frame[]>();
  for (const f of sourceFrames) {
    const key = JSON.stringify([f.origin, f.extent]);
    byBox.set(key, [...(byBox.get(key) ?? []), f]);
  }
  const regions = [...byBox.values()]
    .map((holders) => holders.sort((a, b) => a.rank - b.rank))
    .sort((a, b) =>
      lexicographic(a[0].origin, b[0].origin) || lexicographic(a[0].extent, b[0].extent)
    );
  if (regions.length ** 2 > budget.maxPairChecks) {
    throw new ReferenceRefusal("budget", "source regions");
  }
  const targets = frames(target, budget).sort((a, b) =>
    a.rank - b.rank || lexicographic(a.origin, b.origin) || lexicographic(a.extent, b.extent)
  );
  if (regions.length * targets.length > budget.maxPairChecks) {
    throw new ReferenceRefusal("budget", "pair checks");
  }
  const candidates: TransferSegmentDict[] = [];
  for (const t of targets) {
    for (const holders of regions) {
      const shared = intersect(t, holders[0].origin, holders[0].extent);
      if (shared.extent.some((e) => e === 0)) continue;
      let from = holders[0];
      if (selector && holders.length > 1) {
        const rank = selector(holders.map((h) => h.rank));
        from = holders.find((h) => h.rank === rank)!;
      }
      candidates.push({
        shape: shared.extent,
        source: [from.rank, address(from, shared.origin), from.strides],
        target: [t.rank, address(t, shared.origin), t.strides],
      });
    }
  }
  const segments = referenceCoalesce(candidates, budget.maxMergePasses);
  if (segments.length > budget.maxSegments) throw new ReferenceRefusal("budget", "segments");
  if (JSON.stringify(segments).length > budget.maxPlanBytes) {
    throw new ReferenceRefusal("budget", "plan bytes");
  }
  return segments;
}
