/**
 * Deep validation of affine maps for planning, argued over pieces and never per element
 * (DeepSpeed `affine_transfer.py`: `_normalized`, `_frame_of`, `_shards_tile`,
 * `_validate_holders`, `_covers_union`).
 *
 * A map passes when: every shard has the parameter's number of axes; every non-empty piece is
 * an axis-aligned box with row-major strides on both sides (the planning requirement), inside
 * `F` and inside its shard; each rank's pieces partition its shard **by address** (pairwise
 * disjoint local boxes whose volumes sum to the shard); no rank holds overlapping logical
 * pieces; every piece's declared `locations` are exactly the ranks that hold all of it
 * (homogeneity of replicated pieces); and, for {@link validateMapForPlanning}, the pieces
 * cover `F`.
 *
 * @module
 */

import {
  boxesOverlap,
  boxIntersection,
  boxToString,
  compareCoords,
  forEachOverlap,
  sweepAxis,
} from "./_box.ts";
import type { Box } from "./_box.ts";
export type { Box } from "./_box.ts";
import { InvalidMapError, PlanBudgetError, UnsupportedLayoutError } from "./affine_errors.ts";
import { numelOf, rowMajorStrides } from "./map.ts";
import type { AffinePiece, ParamAffineMap } from "./map.ts";

/**
 * Limits on planning work (DeepSpeed `PlanBudget`). Exhausting one raises {@link PlanBudgetError};
 * a plan is never silently truncated.
 *
 * The limits and what they count are DeepSpeed's (`deepspeed/checkpoint/affine_transfer.py` at
 * `dc598334`, the planner behind the test vectors), so a map is refused exactly when DeepSpeed's
 * planner would refuse it. The counts are DeepSpeed's even where this planner does less work: it
 * sweeps sorted boxes instead of checking pairs, but `maxPairChecks` still bounds the pairs
 * DeepSpeed would check.
 */
export interface PlanBudget {
  /** Most axes a parameter may have (refused as `UnsupportedLayoutError`, as in DeepSpeed). */
  maxNdim: number;
  /** Most non-empty pieces one map may list. */
  maxPiecesPerMap: number;
  /**
   * Most pairwise checks, each bound on its own: one rank's pieces squared, distinct source
   * regions squared, source regions × target pieces, and the policy's parts of one parameter.
   */
  maxPairChecks: number;
  /** Most segments one parameter's plan may have after coalescing. */
  maxSegments: number;
  /** Most coalescing passes. */
  maxMergePasses: number;
  /** Most bytes of one parameter's segment list as compact JSON with sorted keys. */
  maxPlanBytes: number;
  /**
   * Most merge candidates examined while coalescing one parameter. Not a limit of the upstream
   * commit the defaults follow, so unlimited by default; DeepSpeed 0.19.8 sets 2^18
   * (docs/plan-sync.md, "Budgets"). A caller may set one.
   */
  maxMergeChecks: number;
}

/** DeepSpeed's default limits (`PlanBudget()`), plus an unlimited `maxMergeChecks`. */
export const DEFAULT_PLAN_BUDGET: Readonly<PlanBudget> = Object.freeze({
  maxNdim: 8,
  maxPiecesPerMap: 1 << 12,
  maxPairChecks: 1 << 18,
  maxSegments: 1 << 16,
  maxMergePasses: 8,
  maxPlanBytes: 1 << 24,
  maxMergeChecks: Number.POSITIVE_INFINITY,
});

/** Fills the missing fields of a partial budget with the defaults. */
export function resolveBudget(budget?: Partial<PlanBudget>): PlanBudget {
  return { ...DEFAULT_PLAN_BUDGET, ...(budget ?? {}) };
}

/** One non-empty piece normalised to boxes: where it sits in `F` and in its rank's shard. */
export interface MapFrame {
  /** Rank whose shard lists the piece. */
  rank: number;
  /** Declared holders, sorted. */
  locations: readonly number[];
  /** The block of `F`. */
  box: Box;
  /** The same block in the shard's coordinates. */
  local: Box;
  /** Shard storage offset of the block's first element. */
  offset: number;
  /** Row-major strides of the shard. */
  strides: readonly number[];
  /** Elements in the shard. */
  shardNumel: number;
}

/** Shard offset of a sub-box of a frame's region, in that frame's shard addressing. */
export function frameAddress(frame: MapFrame, origin: readonly number[]): number {
  let a = frame.offset;
  for (let i = 0; i < origin.length; i++) a += (origin[i] - frame.box.origin[i]) * frame.strides[i];
  return a;
}

/** The grid coordinate a storage offset names, or null when it names none. */
function coordinateOf(
  offset: number,
  strides: readonly number[],
  shape: readonly number[],
): number[] | null {
  const out: number[] = new Array(shape.length);
  let rest = offset;
  for (let i = 0; i < shape.length; i++) {
    if (strides[i] === 0) return null;
    const c = Math.floor(rest / strides[i]);
    if (c >= shape[i]) return null;
    out[i] = c;
    rest -= c * strides[i];
  }
  return rest === 0 ? out : null;
}

function pieceName(side: string, rank: number, index: number): string {
  return `${side} rank ${rank} piece ${index}`;
}

/** One distinct logical box of a map and every frame listing it, sorted by rank. */
export interface MapRegion {
  /** The block of `F`. */
  box: Box;
  /** The frames whose box is exactly this block, sorted by rank. */
  frames: MapFrame[];
}

/** A map proven fit for planning ({@link normalizeMapRegions}). */
export interface NormalizedMap {
  /** Every non-empty piece, in rank order then piece order. */
  frames: MapFrame[];
  /** Distinct logical boxes, sorted by (origin, extent). */
  regions: MapRegion[];
  /** The first pair of distinct regions that overlap (indices into `regions`), or null. */
  overlappingRegions: [number, number] | null;
  /** Elements of `F` held by at least one rank (replicas counted once). */
  coveredVolume: number;
}

/**
 * Normalises every non-empty piece of a map to a {@link MapFrame} and proves the map fit for
 * planning: shards tile by address and holders are homogeneous. Coverage of `F` is left to the
 * caller (a target may replicate with different boundaries; a source may not).
 *
 * @throws {InvalidMapError} the map contradicts itself.
 * @throws {UnsupportedLayoutError} scaled pieces, non-row-major strides, shard rank mismatch.
 * @throws {PlanBudgetError} a limit of `budget` is exceeded.
 */
export function normalizeMap(
  map: ParamAffineMap,
  side: string,
  budget: PlanBudget = DEFAULT_PLAN_BUDGET,
): MapFrame[] {
  return normalizeMapRegions(map, side, budget).frames;
}

/**
 * {@link normalizeMap} returning its by-products too: the distinct regions, the first pair of
 * overlapping ones, and the volume the pieces cover. Every check runs on sorted boxes (a sweep
 * along one axis), never on all pairs: cost is `n log n` in pieces plus the pairs of boxes that
 * overlap on the sweep axis.
 *
 * Budgets are DeepSpeed's (`_normalized`, `_shards_tile`): at most `maxNdim` axes, at most
 * `maxPiecesPerMap` non-empty pieces, and at most `maxPairChecks` for the square of the pieces of
 * one rank. Holder validation has no budget of its own, as in DeepSpeed, whose planner does not
 * run it.
 */
export function normalizeMapRegions(
  map: ParamAffineMap,
  side: string,
  budget: PlanBudget = DEFAULT_PLAN_BUDGET,
): NormalizedMap {
  const logicalShape = map.logicalShape;
  const nd = logicalShape.length;
  if (nd > budget.maxNdim) {
    throw new UnsupportedLayoutError(`${side}: ${nd} axes exceeds maxNdim ${budget.maxNdim}`);
  }
  let pieceCount = 0;
  map.ranks.forEach((shard, rank) => {
    if (shard.shardShape.length !== nd) {
      throw new UnsupportedLayoutError(
        `${side}: rank ${rank} shard has ${shard.shardShape.length} axes, the parameter ${nd}, ` +
          "so no axis correspondence exists to plan against",
      );
    }
    const pieces = shard.pieces;
    for (let i = 0; i < pieces.length; i++) if (numelOf(pieces[i].shape) > 0) pieceCount++;
  });
  // DeepSpeed counts the pieces it plans with: the non-empty ones.
  if (pieceCount > budget.maxPiecesPerMap) {
    throw new PlanBudgetError(
      `${side}: ${pieceCount} pieces exceeds maxPiecesPerMap ${budget.maxPiecesPerMap}`,
    );
  }
  const logicalStrides = rowMajorStrides(logicalShape);
  const frames: MapFrame[] = [];
  const byRank: MapFrame[][] = [];
  map.ranks.forEach((shard, rank) => {
    const shardNumel = numelOf(shard.shardShape);
    let nonEmpty = 0;
    const pieces = shard.pieces;
    for (let i = 0; i < pieces.length; i++) if (numelOf(pieces[i].shape) > 0) nonEmpty++;
    if (shardNumel > 0 && nonEmpty === 0) {
      throw new InvalidMapError(
        `${side}: rank ${rank} declares a nonempty shard but has no pieces`,
      );
    }
    if (shardNumel === 0) {
      if (nonEmpty > 0) {
        throw new InvalidMapError(
          `${side}: rank ${rank} declares an empty shard and holds a piece`,
        );
      }
      return;
    }
    const shardStrides = rowMajorStrides(shard.shardShape);
    const held: MapFrame[] = [];
    for (let index = 0; index < pieces.length; index++) {
      const frame = frameOf(
        pieces[index],
        rank,
        index,
        side,
        logicalShape,
        logicalStrides,
        shard.shardShape,
        shardStrides,
        shardNumel,
      );
      if (frame === null) continue;
      frames.push(frame);
      held.push(frame);
    }
    byRank.push(held);
  });
  shardsTile(byRank, side, budget);
  const regionOf: number[] = new Array(frames.length);
  const address: number[] = new Array(frames.length);
  for (let i = 0; i < frames.length; i++) {
    const o = frames[i].box.origin;
    let a = 0;
    for (let k = 0; k < o.length; k++) a += o[k] * logicalStrides[k];
    address[i] = a;
  }
  const regions = regionsOf(frames, address, regionOf);
  const overlappingRegions = validateHolders(frames, regions, regionOf, side);
  let coveredVolume = 0;
  // With homogeneous holders, the elements held by exactly the ranks L are tiled by the pieces of
  // rank min(L) declaring L, so each such class is counted once, through its lowest holder.
  for (let i = 0; i < frames.length; i++) {
    const f = frames[i];
    if (f.rank === f.locations[0]) coveredVolume += numelOf(f.box.extent);
  }
  return { frames, regions, overlappingRegions, coveredVolume };
}

/** One piece as a frame (null when empty), refusing whatever is not an axis-aligned box. */
function frameOf(
  piece: AffinePiece,
  rank: number,
  index: number,
  side: string,
  logicalShape: readonly number[],
  logicalStrides: readonly number[],
  shardShape: readonly number[],
  shardStrides: readonly number[],
  shardNumel: number,
): MapFrame | null {
  const nd = logicalShape.length;
  if (piece.shape.length !== nd) {
    throw new InvalidMapError(
      `${pieceName(side, rank, index)}: spans ${piece.shape.length} axes of a ${nd}-axis parameter`,
    );
  }
  const name = () => pieceName(side, rank, index);
  const numel = checkedNumel(piece, nd, name);
  // Builders give a piece a rank does not hold its running offset, possibly one past the end.
  if (numel === 0) return null;
  checkStrides(piece, logicalStrides, shardStrides, name);
  const origin = coordinateOf(piece.sourceOffset, logicalStrides, logicalShape);
  if (origin === null) {
    throw new InvalidMapError(
      `${
        pieceName(side, rank, index)
      }: source offset ${piece.sourceOffset} is not a coordinate of a ` +
        `${JSON.stringify(logicalShape)} tensor`,
    );
  }
  // Shared with the piece: the planner never writes a frame's extent.
  const extent = piece.shape;
  const box: Box = { origin, extent };
  for (let i = 0; i < nd; i++) {
    if (origin[i] + extent[i] > logicalShape[i]) {
      throw new InvalidMapError(
        `${pieceName(side, rank, index)}: covers ${
          boxToString(box)
        }, outside the logical parameter of ` +
          JSON.stringify(logicalShape),
      );
    }
  }
  const localOrigin = coordinateOf(piece.destOffset, shardStrides, shardShape);
  if (localOrigin === null) {
    throw new InvalidMapError(
      `${pieceName(side, rank, index)}: dest offset ${piece.destOffset} is not a coordinate of a ` +
        `${JSON.stringify(shardShape)} shard`,
    );
  }
  const local: Box = { origin: localOrigin, extent };
  for (let i = 0; i < nd; i++) {
    if (localOrigin[i] + extent[i] > shardShape[i]) {
      throw new InvalidMapError(
        `${pieceName(side, rank, index)}: writes ${boxToString(local)}, outside the ${
          JSON.stringify(shardShape)
        } shard`,
      );
    }
  }
  return {
    rank,
    locations: piece.locations,
    box,
    local,
    offset: piece.destOffset,
    strides: shardStrides,
    shardNumel,
  };
}

/** A piece's element count, once its extents, holders, scale and stride vectors are sound. */
function checkedNumel(piece: AffinePiece, nd: number, name: () => string): number {
  let numel = 1;
  for (let i = 0; i < nd; i++) {
    if (piece.shape[i] < 0) {
      throw new InvalidMapError(`${name()}: negative extent`);
    }
    numel *= piece.shape[i];
  }
  if (piece.locations.length === 0) {
    throw new InvalidMapError(`${name()}: names no holder`);
  }
  if (piece.scale !== 1) {
    throw new UnsupportedLayoutError(
      `${name()}: scale ${piece.scale}, which would leave a resumed optimizer in the source ` +
        "coordinate",
    );
  }
  if (piece.sourceStrides.length !== nd || piece.destStrides.length !== nd) {
    throw new InvalidMapError(
      `${name()}: stride vector length must match the piece rank`,
    );
  }
  return numel;
}

/** Every axis a piece spans more than once steps as the logical tensor and the shard do. */
function checkStrides(
  piece: AffinePiece,
  logicalStrides: readonly number[],
  shardStrides: readonly number[],
  name: () => string,
): void {
  const nd = logicalStrides.length;
  for (let axis = 0; axis < nd; axis++) {
    if (piece.shape[axis] > 1 && piece.sourceStrides[axis] !== logicalStrides[axis]) {
      throw new UnsupportedLayoutError(
        `${name()}: source axis ${axis} strides ${piece.sourceStrides[axis]}, expected ` +
          `${logicalStrides[axis]}`,
      );
    }
    if (piece.shape[axis] > 1 && piece.destStrides[axis] !== shardStrides[axis]) {
      throw new UnsupportedLayoutError(
        `${name()}: dest axis ${axis} strides ${piece.destStrides[axis]}, expected ` +
          `${shardStrides[axis]}`,
      );
    }
  }
}

/** Below this many boxes, all pairs cost less than sorting for a sweep. */
const SMALL = 8;

/**
 * Whether boxes, in the order given, each start on axis 0 at or after the end of every earlier
 * one: then no two overlap, proven in one pass (the common case of packed shards and row splits).
 */
function separatedOnFirstAxis(boxes: readonly Box[]): boolean {
  if (boxes.length === 0 || boxes[0].origin.length === 0) return boxes.length <= 1;
  let end = -Infinity;
  for (let i = 0; i < boxes.length; i++) {
    const b = boxes[i];
    if (b.origin[0] < end) return false;
    end = b.origin[0] + b.extent[0];
  }
  return true;
}

/** The first pair of overlapping boxes (by sweep, or all pairs when few), or null. */
function firstOverlap(boxes: readonly Box[]): [number, number] | null {
  if (boxes.length < 2 || separatedOnFirstAxis(boxes)) return null;
  if (boxes.length <= SMALL) {
    for (let i = 0; i < boxes.length; i++) {
      for (let j = i + 1; j < boxes.length; j++) {
        if (boxesOverlap(boxes[i], boxes[j])) return [i, j];
      }
    }
    return null;
  }
  let found: [number, number] | null = null;
  forEachOverlap(boxes, sweepAxis(boxes), (i, j) => {
    found = i < j ? [i, j] : [j, i];
    return true;
  });
  return found;
}

/**
 * Proves each rank's pieces partition its shard by address, not merely by element count: three
 * pieces can cover disjoint runs of `F` while two land on the same shard addresses, and their
 * numels still sum to the shard size. Disjoint row-major boxes whose volumes sum to the shard's
 * volume fill it exactly once. DeepSpeed's budget applies: a rank's pieces squared may not exceed
 * `maxPairChecks` (the sweep itself does far less work).
 */
function shardsTile(byRank: readonly MapFrame[][], side: string, budget: PlanBudget): void {
  for (const held of byRank) {
    const rank = held[0].rank;
    if (held.length * held.length > budget.maxPairChecks) {
      throw new PlanBudgetError(
        `${side}: rank ${rank} holds ${held.length} pieces, over the budget for address checks`,
      );
    }
    let overlap: [number, number] | null = null;
    if (held.length > 1) {
      let end = -Infinity, separated = held[0].local.origin.length > 0;
      for (let i = 0; separated && i < held.length; i++) {
        const o = held[i].local.origin[0];
        if (o < end) separated = false;
        end = o + held[i].local.extent[0];
      }
      if (!separated) overlap = firstOverlap(held.map((f) => f.local));
    }
    if (overlap) {
      throw new InvalidMapError(
        `${side}: rank ${rank} pieces ${boxToString(held[overlap[0]].box)} and ${
          boxToString(held[overlap[1]].box)
        } both occupy part of the same shard addresses`,
      );
    }
    let volume = 0;
    for (let i = 0; i < held.length; i++) volume += numelOf(held[i].box.extent);
    if (volume !== held[0].shardNumel) {
      throw new InvalidMapError(
        `${side}: rank ${rank} pieces account for ${volume} of its ${held[0].shardNumel} ` +
          "shard elements",
      );
    }
  }
}

/**
 * Groups frames by identical box: regions sorted by (origin, extent), frames by rank. Fills
 * `regionOf[i]` with the region of `frames[i]`. `address[i]` is the row-major address of frame
 * `i`'s origin in `F`, which orders origins as the coordinates do, so the sort compares numbers.
 */
function regionsOf(
  frames: readonly MapFrame[],
  address: readonly number[],
  regionOf: number[],
): MapRegion[] {
  const n = frames.length;
  // Small lists sort as plain arrays: a typed array costs more to create than it saves.
  const order: Int32Array | number[] = n > 64 ? new Int32Array(n) : new Array<number>(n);
  const cmp = (i: number, j: number) =>
    address[i] - address[j] || compareCoords(frames[i].box.extent, frames[j].box.extent) ||
    frames[i].rank - frames[j].rank || i - j;
  let sorted = true, maxAddress = 0;
  for (let i = 0; i < n; i++) {
    order[i] = i;
    if (sorted && i > 0 && cmp(i - 1, i) > 0) sorted = false;
    if (address[i] > maxAddress) maxAddress = address[i];
  }
  if (!sorted) {
    if (n > 64 && (maxAddress + 1) * n <= Number.MAX_SAFE_INTEGER) {
      // A native numeric sort of (address, index) packed into one number, then the few runs
      // of equal addresses (replicas, differently shaped boxes) by the full order.
      const packed = new Float64Array(n);
      for (let i = 0; i < n; i++) packed[i] = address[i] * n + i;
      packed.sort();
      for (let k = 0; k < n; k++) order[k] = packed[k] % n;
      for (let k = 0; k < n;) {
        let end = k + 1;
        while (end < n && address[order[end]] === address[order[k]]) end++;
        if (end - k > 1) (order as Int32Array).subarray(k, end).sort(cmp);
        k = end;
      }
    } else order.sort(cmp);
  }
  const regions: MapRegion[] = [];
  let last: MapRegion | null = null;
  let lastAt = -1;
  for (let k = 0; k < n; k++) {
    const i = order[k];
    const f = frames[i];
    if (
      last !== null && address[i] === address[lastAt] &&
      compareCoords(last.box.extent, f.box.extent) === 0
    ) last.frames.push(f);
    else {
      last = { box: f.box, frames: [f] };
      lastAt = i;
      regions.push(last);
    }
    regionOf[i] = regions.length - 1;
  }
  return regions;
}

function sameSequence(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * A piece's declared holders must be exactly the ranks holding all of its logical box, and no
 * rank may hold overlapping logical pieces. Argued over distinct regions: a region overlapping no
 * other is held exactly by the ranks listing it; otherwise its overlapping neighbours (found by a
 * sweep) add their ranks and the volume they cover. Returns the first overlapping pair of
 * distinct regions, in region order, or null.
 */
function validateHolders(
  frames: readonly MapFrame[],
  regions: readonly MapRegion[],
  regionOf: readonly number[],
  side: string,
): [number, number] | null {
  const overlapping = (rank: number, a: Box, b: Box) =>
    new InvalidMapError(
      `${side}: rank ${rank} holds overlapping logical pieces ${boxToString(a)} and ` +
        boxToString(b),
    );
  for (let r = 0; r < regions.length; r++) {
    const held = regions[r].frames;
    for (let k = 1; k < held.length; k++) {
      if (held[k].rank === held[k - 1].rank) {
        throw overlapping(held[k].rank, held[k].box, held[k].box);
      }
    }
  }
  const { near, first } = regionNeighbours(regions);
  if (near !== null) {
    // A rank listing two overlapping regions holds overlapping logical pieces.
    for (const [a, list] of near) {
      for (const b of list) {
        if (b < a) continue;
        const fa = regions[a].frames, fb = regions[b].frames;
        for (let x = 0, y = 0; x < fa.length && y < fb.length;) {
          if (fa[x].rank === fb[y].rank) throw overlapping(fa[x].rank, fa[x].box, fb[y].box);
          if (fa[x].rank < fb[y].rank) x++;
          else y++;
        }
      }
    }
  }
  let withFrames: Set<number> | null = null;
  const hasFrames = (rank: number) => {
    withFrames ??= new Set(frames.map((f) => f.rank));
    return withFrames.has(rank);
  };
  const ranksOf = (r: number) => regions[r].frames.map((f) => f.rank);
  let coverage: Map<number, Map<number, number>> | null = null;
  for (let fi = 0; fi < frames.length; fi++) {
    const frame = frames[fi];
    const r = regionOf[fi];
    const list = near?.get(r);
    const own = regions[r].frames;
    if (list === undefined) {
      // Held exactly by the ranks listing this very box.
      let same = own.length === frame.locations.length;
      for (let k = 0; same && k < own.length; k++) same = own[k].rank === frame.locations[k];
      if (same) continue;
      const actual = ranksOf(r);
      for (const rank of frame.locations) {
        if (!actual.includes(rank) && hasFrames(rank)) {
          throw new InvalidMapError(
            `${side}: rank ${rank} does not hold all of ${boxToString(frame.box)}`,
          );
        }
      }
      throw differentLocations(side, frame, actual);
    }
    const volume = numelOf(frame.box.extent);
    coverage ??= new Map();
    let covered = coverage.get(r);
    if (covered === undefined) {
      covered = new Map<number, number>();
      for (const f of own) covered.set(f.rank, volume);
      for (const n of list) {
        const shared = numelOf(boxIntersection(frame.box, regions[n].box).extent);
        for (const f of regions[n].frames) {
          covered.set(f.rank, (covered.get(f.rank) ?? 0) + shared);
        }
      }
      coverage.set(r, covered);
    }
    const sorted = [...frame.locations].sort((a, b) => a - b);
    for (const rank of sorted) {
      if (hasFrames(rank) && (covered.get(rank) ?? 0) !== volume) {
        throw new InvalidMapError(
          `${side}: rank ${rank} does not hold all of ${boxToString(frame.box)}`,
        );
      }
    }
    const actual = [...covered.keys()].sort((a, b) => a - b);
    if (!sameSequence(actual, frame.locations)) throw differentLocations(side, frame, actual);
  }
  return first;
}

/**
 * Neighbours: distinct regions sharing an element, each pair listed both ways (null when there
 * is none), and the first such pair in region order.
 */
function regionNeighbours(
  regions: readonly MapRegion[],
): { near: Map<number, number[]> | null; first: [number, number] | null } {
  let neighbours: Map<number, number[]> | null = null;
  let first: [number, number] | null = null;
  // Regions come sorted by origin, so a single pass often proves them pairwise disjoint.
  let separated = true;
  for (let r = 1, end = -Infinity; separated && r < regions.length; r++) {
    const a = regions[r - 1].box, b = regions[r].box;
    if (a.origin.length === 0) separated = false;
    else {
      end = Math.max(end, a.origin[0] + a.extent[0]);
      if (b.origin[0] < end) separated = false;
    }
  }
  if (regions.length > 1 && !separated) {
    const boxes = regions.map((r) => r.box);
    const visit = (i: number, j: number) => {
      neighbours ??= new Map();
      const li = neighbours.get(i);
      if (li) li.push(j);
      else neighbours.set(i, [j]);
      const lj = neighbours.get(j);
      if (lj) lj.push(i);
      else neighbours.set(j, [i]);
      const pair: [number, number] = i < j ? [i, j] : [j, i];
      if (first === null || pair[0] < first[0] || (pair[0] === first[0] && pair[1] < first[1])) {
        first = pair;
      }
    };
    if (boxes.length <= SMALL) {
      for (let i = 0; i < boxes.length; i++) {
        for (let j = i + 1; j < boxes.length; j++) {
          if (boxesOverlap(boxes[i], boxes[j])) visit(i, j);
        }
      }
    } else forEachOverlap(boxes, sweepAxis(boxes), visit);
  }
  return { near: neighbours as Map<number, number[]> | null, first };
}

function differentLocations(side: string, frame: MapFrame, actual: number[]): InvalidMapError {
  return new InvalidMapError(
    `${side}: ${boxToString(frame.box)} has different locations: declares [${
      frame.locations.join(", ")
    }], held by [${actual.join(", ")}]`,
  );
}

/**
 * Full planning validation of one map: {@link normalizeMap} plus coverage of `F` by the union of
 * its pieces (counted per holder class, linear in pieces). Returns the frames for reuse.
 *
 * @throws {InvalidMapError} e.g. "pieces do not cover the full logical parameter".
 */
export function validateMapForPlanning(
  map: ParamAffineMap,
  side = "map",
  budget: PlanBudget = DEFAULT_PLAN_BUDGET,
): MapFrame[] {
  const { frames, coveredVolume } = normalizeMapRegions(map, side, budget);
  if (coveredVolume !== numelOf(map.logicalShape)) {
    throw new InvalidMapError(`${side}: pieces do not cover the full logical parameter`);
  }
  return frames;
}
