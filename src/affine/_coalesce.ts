/**
 * Segment coalescing as DeepSpeed's `_coalesce` does it, segment for segment: the form of one
 * strided copy, the strict order of segments, and the join of segments that continue each other.
 * The planner ({@link "./plan_transfers.ts"}) emits segments; this module only joins and orders
 * them. `plan_transfers.ts` re-exports the public part.
 *
 * @module
 */

import { compareCoords } from "./_box.ts";
import { PlanBudgetError } from "./affine_errors.ts";
import type { PlanBudget } from "./validate_map.ts";

/** One directly executable strided copy in DeepSpeed `TransferSegment.to_dict()` form. */
export interface TransferSegmentDict {
  /** Extent shared by both sides. */
  shape: number[];
  /** `[source location, offset, strides]` in the source shard, in elements. */
  source: [number, number, number[]];
  /** `[target location, offset, strides]` in the target shard, in elements. */
  target: [number, number, number[]];
  /** First logical coordinate (DeepSpeed v1 only; the planner never emits it). */
  logical_origin?: number[];
}

/** Strict total order of segments: target, target offset, source, source offset, shape, strides. */
export function compareSegments(a: TransferSegmentDict, b: TransferSegmentDict): number {
  return a.target[0] - b.target[0] || a.target[1] - b.target[1] ||
    a.source[0] - b.source[0] || a.source[1] - b.source[1] ||
    compareCoords(a.shape, b.shape) || compareCoords(a.source[2], b.source[2]) ||
    compareCoords(a.target[2], b.target[2]);
}

/**
 * Joins segments exactly as DeepSpeed's `_coalesce` does, segment for segment: segments are
 * grouped by (source rank, target rank, source strides, target strides, axes) and sorted by
 * (target offset, source offset, shape); each pass walks a group in order and joins every
 * segment into the **first** kept segment it continues (DeepSpeed `_merge`: on the first axis
 * whose other extents are equal, the kept segment then the new one as the first, when
 * `first.offset + first.shape[axis]·stride[axis] == second.offset` on both sides), else keeps it;
 * passes repeat on the kept list until nothing joins or `maxMergePasses` are spent. Address
 * continuation makes every join exact as a copy. Does not claim the fewest segments.
 *
 * DeepSpeed finds that first kept segment by trying every kept one; here the candidates are
 * looked up by address (the kept segment starting where the new one ends on an axis, or ending
 * where it starts), so a pass costs `O(axes)` per segment instead of `O(kept)`, with the same
 * result. The result is sorted by {@link compareSegments}. The input is not modified.
 */
export function coalesceSegments(
  segments: readonly TransferSegmentDict[],
  budget: PlanBudget,
): TransferSegmentDict[] {
  return coalesceOwned(
    segments.map((s) => ({
      shape: [...s.shape],
      source: [s.source[0], s.source[1], s.source[2]],
      target: [s.target[0], s.target[1], s.target[2]],
    })),
    budget,
  );
}

/** DeepSpeed's group key first, then its order within a group: target, source offset, shape. */
function compareForMerge(a: TransferSegmentDict, b: TransferSegmentDict): number {
  return a.source[0] - b.source[0] || a.target[0] - b.target[0] ||
    a.shape.length - b.shape.length ||
    (a.source[2] === b.source[2] ? 0 : compareCoords(a.source[2], b.source[2])) ||
    (a.target[2] === b.target[2] ? 0 : compareCoords(a.target[2], b.target[2])) ||
    a.target[1] - b.target[1] || a.source[1] - b.source[1] || compareCoords(a.shape, b.shape);
}

function sameGroup(a: TransferSegmentDict, b: TransferSegmentDict): boolean {
  return a.source[0] === b.source[0] && a.target[0] === b.target[0] &&
    a.shape.length === b.shape.length &&
    (a.source[2] === b.source[2] || compareCoords(a.source[2], b.source[2]) === 0) &&
    (a.target[2] === b.target[2] || compareCoords(a.target[2], b.target[2]) === 0);
}

/** Multimap from an address to indices of kept segments (one index, or a list on collision). */
type AddressIndex = Map<number, number | number[]>;

function indexAdd(m: AddressIndex, key: number, value: number): void {
  const e = m.get(key);
  if (e === undefined) m.set(key, value);
  else if (typeof e === "number") m.set(key, [e, value]);
  else e.push(value);
}

function indexRemove(m: AddressIndex, key: number, value: number): void {
  const e = m.get(key);
  if (e === value) m.delete(key);
  else if (e !== undefined && typeof e !== "number") {
    const k = e.indexOf(value);
    if (k >= 0) e.splice(k, 1);
    if (e.length === 1) m.set(key, e[0]);
    else if (e.length === 0) m.delete(key);
  }
}

/**
 * How DeepSpeed's `_merge(kept, next)` would join: `2·axis` when `kept` comes first on `axis`,
 * `2·axis + 1` when `next` does, -1 when they do not join.
 */
function joinOf(
  kept: TransferSegmentDict,
  next: TransferSegmentDict,
  ss: readonly number[],
  ts: readonly number[],
): number {
  const ks = kept.shape, ns = next.shape;
  const nd = ks.length;
  for (let axis = 0; axis < nd; axis++) {
    let same = true;
    for (let k = 0; k < nd; k++) {
      if (k !== axis && ks[k] !== ns[k]) {
        same = false;
        break;
      }
    }
    if (!same) continue;
    if (
      kept.source[1] + ks[axis] * ss[axis] === next.source[1] &&
      kept.target[1] + ks[axis] * ts[axis] === next.target[1]
    ) return 2 * axis;
    if (
      next.source[1] + ns[axis] * ss[axis] === kept.source[1] &&
      next.target[1] + ns[axis] * ts[axis] === kept.target[1]
    ) return 2 * axis + 1;
  }
  return -1;
}

/** Groups up to this size are merged by DeepSpeed's own first-fit scan: cheaper than indexing. */
const SCAN_GROUP = 16;

/**
 * Keys for the (source location, target location) pairs of segments: small integers when the
 * locations allow (so a `Map` hashes them without boxing), strings otherwise.
 */
function rankPairKeys(
  segments: readonly TransferSegmentDict[],
): (s: TransferSegmentDict) => number | string {
  let maxSource = 0, maxTarget = 0, small = true;
  for (let i = 0; i < segments.length && small; i++) {
    const a = segments[i].source[0], b = segments[i].target[0];
    if (!(a >= 0 && b >= 0 && Number.isInteger(a) && Number.isInteger(b))) small = false;
    if (a > maxSource) maxSource = a;
    if (b > maxTarget) maxTarget = b;
  }
  const width = maxTarget + 1;
  if (small && (maxSource + 1) * width < 2 ** 30) return (s) => s.source[0] * width + s.target[0];
  return (s) => `${s.source[0]}|${s.target[0]}`;
}

/** Runs of one target location no longer than this find repeated sources by scanning. */
const SCAN_RUN = 32;

/**
 * The segments of every (source location, target location) pair that has more than one, or null
 * when none has: only those can join. Planner output comes ordered by target location, so short
 * runs of one target are scanned; anything else goes through one `Map`.
 */
function sharedRankPairs(segments: readonly TransferSegmentDict[]): TransferSegmentDict[][] | null {
  let byTarget = true;
  for (let i = 1; i < segments.length && byTarget; i++) {
    byTarget = segments[i - 1].target[0] <= segments[i].target[0];
  }
  let out: TransferSegmentDict[][] | null = null;
  if (byTarget) {
    let wide = false;
    for (let start = 0; start < segments.length && !wide;) {
      let end = start + 1;
      while (end < segments.length && segments[end].target[0] === segments[start].target[0]) end++;
      if (end - start > SCAN_RUN) wide = true;
      for (let i = start + 1; i < end && !wide; i++) {
        const source = segments[i].source[0];
        let seen = false;
        for (let j = start; j < i && !seen; j++) seen = segments[j].source[0] === source;
        if (!seen) continue;
        // A repeated source location in this run: group the run's segments by source.
        const groups = new Map<number, TransferSegmentDict[]>();
        for (let k = start; k < end; k++) {
          const g = groups.get(segments[k].source[0]);
          if (g) g.push(segments[k]);
          else groups.set(segments[k].source[0], [segments[k]]);
        }
        for (const g of groups.values()) if (g.length > 1) (out ??= []).push(g);
        break;
      }
      start = end;
    }
    if (!wide) return out;
  }
  const firstOf = new Map<number | string, number>();
  const lists = new Map<number | string, TransferSegmentDict[]>();
  const rankPairKey = rankPairKeys(segments);
  for (let i = 0; i < segments.length; i++) {
    const key = rankPairKey(segments[i]);
    const at = firstOf.get(key);
    if (at === undefined) {
      firstOf.set(key, i);
      continue;
    }
    const list = lists.get(key);
    if (list === undefined) lists.set(key, [segments[at], segments[i]]);
    else list.push(segments[i]);
  }
  return lists.size > 0 ? [...lists.values()] : null;
}

/** {@link coalesceSegments} on segments the caller gives up: shapes and offsets change in place. */
export function coalesceOwned(
  segments: TransferSegmentDict[],
  budget: PlanBudget,
): TransferSegmentDict[] {
  const shared = sharedRankPairs(segments);
  let alive = segments;
  if (shared !== null) {
    const dead = new Set<TransferSegmentDict>();
    const checks = { count: 0 };
    let index: MergeIndex | null = null;
    for (const members of shared) {
      // DeepSpeed's groups (strides and axes too), each in DeepSpeed's order.
      members.sort(compareForMerge);
      for (let start = 0; start < members.length;) {
        let end = start + 1;
        while (end < members.length && sameGroup(members[start], members[end])) end++;
        if (end - start === 1) {
          start = end;
          continue;
        }
        let live = members.slice(start, end);
        const ss = live[0].source[2], ts = live[0].target[2];
        for (let pass = 0; pass < budget.maxMergePasses; pass++) {
          const kept = live.length <= SCAN_GROUP
            ? scanPass(live, ss, ts, budget, checks, dead)
            : indexedPass(live, ss, ts, index ??= new MergeIndex(), budget, checks, dead);
          const joined = kept.length < live.length;
          live = kept;
          if (!joined) break;
        }
        start = end;
      }
    }
    if (dead.size > 0) alive = segments.filter((s) => !dead.has(s));
  }
  // Joined segments stay where the first of them was; often the order is already final.
  for (let i = 1; i < alive.length; i++) {
    if (compareSegments(alive[i - 1], alive[i]) > 0) return alive.sort(compareSegments);
  }
  return alive;
}

function countCheck(budget: PlanBudget, checks: { count: number }): void {
  if (++checks.count > budget.maxMergeChecks) {
    throw new PlanBudgetError(`merge checks exceed maxMergeChecks ${budget.maxMergeChecks}`);
  }
}

/** Applies DeepSpeed's join `how` ({@link joinOf}) of `next` into `kept`, in place. */
function join(kept: TransferSegmentDict, next: TransferSegmentDict, how: number): void {
  if ((how & 1) === 1) {
    kept.source[1] = next.source[1];
    kept.target[1] = next.target[1];
  }
  kept.shape[how >> 1] += next.shape[how >> 1];
}

/** One DeepSpeed `_coalesce` pass, as DeepSpeed runs it: each segment against every kept one. */
function scanPass(
  input: readonly TransferSegmentDict[],
  ss: readonly number[],
  ts: readonly number[],
  budget: PlanBudget,
  checks: { count: number },
  dead: Set<TransferSegmentDict>,
): TransferSegmentDict[] {
  const kept: TransferSegmentDict[] = [];
  for (const next of input) {
    let joined = false;
    for (let k = 0; k < kept.length; k++) {
      countCheck(budget, checks);
      const how = joinOf(kept[k], next, ss, ts);
      if (how >= 0) {
        join(kept[k], next, how);
        dead.add(next);
        joined = true;
        break;
      }
    }
    if (!joined) kept.push(next);
  }
  return kept;
}

/** Kept segments by the target address they start at and, per axis, the one they end at. */
class MergeIndex {
  starts: AddressIndex = new Map();
  ends: AddressIndex[] = [];

  reset(nd: number): void {
    this.starts.clear();
    while (this.ends.length < nd) this.ends.push(new Map());
    for (const m of this.ends) m.clear();
  }

  add(s: TransferSegmentDict, i: number, ts: readonly number[]): void {
    indexAdd(this.starts, s.target[1], i);
    for (let a = 0; a < s.shape.length; a++) {
      indexAdd(this.ends[a], s.target[1] + s.shape[a] * ts[a], i);
    }
  }

  remove(s: TransferSegmentDict, i: number, ts: readonly number[]): void {
    indexRemove(this.starts, s.target[1], i);
    for (let a = 0; a < s.shape.length; a++) {
      indexRemove(this.ends[a], s.target[1] + s.shape[a] * ts[a], i);
    }
  }
}

/**
 * One DeepSpeed `_coalesce` pass with candidates looked up by address: a kept segment can join
 * the next one only if it ends where the next starts on some axis, or starts where the next ends.
 * The lowest such kept index that DeepSpeed's `_merge` accepts is the one its scan would find.
 */
function indexedPass(
  input: readonly TransferSegmentDict[],
  ss: readonly number[],
  ts: readonly number[],
  index: MergeIndex,
  budget: PlanBudget,
  checks: { count: number },
  dead: Set<TransferSegmentDict>,
): TransferSegmentDict[] {
  const nd = input[0].shape.length;
  index.reset(nd);
  const kept: TransferSegmentDict[] = [];
  let best = -1, how = -1;
  const consider = (next: TransferSegmentDict, entry: number | number[] | undefined) => {
    if (entry === undefined) return;
    const list = typeof entry === "number" ? null : entry;
    const n = list === null ? 1 : list.length;
    for (let k = 0; k < n; k++) {
      const i = list === null ? entry as number : list[k];
      if (best !== -1 && i >= best) continue;
      countCheck(budget, checks);
      const j = joinOf(kept[i], next, ss, ts);
      if (j >= 0) {
        best = i;
        how = j;
      }
    }
  };
  for (const next of input) {
    best = -1;
    how = -1;
    const t = next.target[1];
    for (let a = 0; a < nd; a++) {
      consider(next, index.ends[a].get(t));
      consider(next, index.starts.get(t + next.shape[a] * ts[a]));
    }
    if (best === -1) {
      kept.push(next);
      index.add(next, kept.length - 1, ts);
      continue;
    }
    const into = kept[best];
    index.remove(into, best, ts);
    join(into, next, how);
    dead.add(next);
    index.add(into, best, ts);
  }
  return kept;
}
