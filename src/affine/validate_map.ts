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

import { boxContains, boxesOverlap, boxIntersection, boxSubtract, boxToString } from "./_box.ts";
import type { Box } from "./_box.ts";
export type { Box } from "./_box.ts";
import { InvalidMapError, PlanBudgetError, UnsupportedLayoutError } from "./affine_errors.ts";
import { numelOf, rowMajorStrides } from "./map.ts";
import type { ParamAffineMap } from "./map.ts";

/**
 * Limits on planning work, each checked before the work it bounds (DeepSpeed `PlanBudget`).
 * Exhausting one raises {@link PlanBudgetError}; a plan is never silently truncated.
 */
export interface PlanBudget {
  /** Most axes a parameter may have. */
  maxNdim: number;
  /** Most pieces one map may list. */
  maxPiecesPerMap: number;
  /** Most pairwise checks (pieces², sources × targets, policy parts per parameter). */
  maxPairChecks: number;
  /** Most segments one parameter's plan may have after coalescing. */
  maxSegments: number;
  /** Most coalescing passes. */
  maxMergePasses: number;
  /** Most bytes of one parameter's compact JSON plan. */
  maxPlanBytes: number;
  /** Most merge lookups while coalescing one parameter. */
  maxMergeChecks: number;
}

/** DeepSpeed's default limits (`PlanBudget()` in v3). */
export const DEFAULT_PLAN_BUDGET: Readonly<PlanBudget> = Object.freeze({
  maxNdim: 8,
  maxPiecesPerMap: 1 << 12,
  maxPairChecks: 1 << 18,
  maxSegments: 1 << 16,
  maxMergePasses: 8,
  maxPlanBytes: 1 << 24,
  maxMergeChecks: 1 << 18,
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
  const out: number[] = [];
  let rest = offset;
  for (let i = 0; i < shape.length; i++) {
    if (strides[i] === 0) return null;
    const c = Math.floor(rest / strides[i]);
    if (c >= shape[i]) return null;
    out.push(c);
    rest -= c * strides[i];
  }
  return rest === 0 ? out : null;
}

function pieceName(side: string, rank: number, index: number): string {
  return `${side} rank ${rank} piece ${index}`;
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
  const logicalShape = map.logicalShape;
  const nd = logicalShape.length;
  if (nd > budget.maxNdim) {
    throw new UnsupportedLayoutError(`${side}: ${nd} axes exceeds maxNdim ${budget.maxNdim}`);
  }
  let pieceCount = 0;
  for (const [rank, shard] of map.ranks) {
    if (shard.shardShape.length !== nd) {
      throw new UnsupportedLayoutError(
        `${side}: rank ${rank} shard has ${shard.shardShape.length} axes, the parameter ${nd}, ` +
          "so no axis correspondence exists to plan against",
      );
    }
    pieceCount += shard.pieces.length;
  }
  if (pieceCount > budget.maxPiecesPerMap) {
    throw new PlanBudgetError(
      `${side}: ${pieceCount} pieces exceeds maxPiecesPerMap ${budget.maxPiecesPerMap}`,
    );
  }
  const logicalStrides = rowMajorStrides(logicalShape);
  const whole: Box = { origin: new Array(nd).fill(0), extent: [...logicalShape] };
  const frames: MapFrame[] = [];
  for (const [rank, shard] of map.ranks) {
    const shardNumel = numelOf(shard.shardShape);
    const nonEmpty = shard.pieces.filter((p) => numelOf(p.shape) > 0);
    if (shardNumel > 0 && nonEmpty.length === 0) {
      throw new InvalidMapError(
        `${side}: rank ${rank} declares a nonempty shard but has no pieces`,
      );
    }
    if (shardNumel === 0) {
      if (nonEmpty.length > 0) {
        throw new InvalidMapError(
          `${side}: rank ${rank} declares an empty shard and holds a piece`,
        );
      }
      continue;
    }
    const shardStrides = rowMajorStrides(shard.shardShape);
    const shardBox: Box = { origin: new Array(nd).fill(0), extent: [...shard.shardShape] };
    shard.pieces.forEach((piece, index) => {
      const where = pieceName(side, rank, index);
      if (piece.shape.length !== nd) {
        throw new InvalidMapError(
          `${where}: spans ${piece.shape.length} axes of a ${nd}-axis parameter`,
        );
      }
      if (piece.shape.some((s) => s < 0)) throw new InvalidMapError(`${where}: negative extent`);
      if (piece.locations.length === 0) throw new InvalidMapError(`${where}: names no holder`);
      if (piece.scale !== 1) {
        throw new UnsupportedLayoutError(
          `${where}: scale ${piece.scale}, which would leave a resumed optimizer in the source ` +
            "coordinate",
        );
      }
      if (piece.sourceStrides.length !== nd || piece.destStrides.length !== nd) {
        throw new InvalidMapError(`${where}: stride vector length must match the piece rank`);
      }
      // Builders give a piece a rank does not hold its running offset, possibly one past the end.
      if (numelOf(piece.shape) === 0) return;
      for (let axis = 0; axis < nd; axis++) {
        if (piece.shape[axis] > 1 && piece.sourceStrides[axis] !== logicalStrides[axis]) {
          throw new UnsupportedLayoutError(
            `${where}: source axis ${axis} strides ${piece.sourceStrides[axis]}, expected ` +
              `${logicalStrides[axis]}`,
          );
        }
        if (piece.shape[axis] > 1 && piece.destStrides[axis] !== shardStrides[axis]) {
          throw new UnsupportedLayoutError(
            `${where}: dest axis ${axis} strides ${piece.destStrides[axis]}, expected ` +
              `${shardStrides[axis]}`,
          );
        }
      }
      const origin = coordinateOf(piece.sourceOffset, logicalStrides, logicalShape);
      if (origin === null) {
        throw new InvalidMapError(
          `${where}: source offset ${piece.sourceOffset} is not a coordinate of a ` +
            `${JSON.stringify(logicalShape)} tensor`,
        );
      }
      const box: Box = { origin, extent: [...piece.shape] };
      if (!boxContains(whole, box)) {
        throw new InvalidMapError(
          `${where}: covers ${boxToString(box)}, outside the logical parameter of ` +
            JSON.stringify(logicalShape),
        );
      }
      const localOrigin = coordinateOf(piece.destOffset, shardStrides, shard.shardShape);
      if (localOrigin === null) {
        throw new InvalidMapError(
          `${where}: dest offset ${piece.destOffset} is not a coordinate of a ` +
            `${JSON.stringify(shard.shardShape)} shard`,
        );
      }
      const local: Box = { origin: localOrigin, extent: [...piece.shape] };
      if (!boxContains(shardBox, local)) {
        throw new InvalidMapError(
          `${where}: writes ${boxToString(local)}, outside the ${
            JSON.stringify(shard.shardShape)
          } shard`,
        );
      }
      frames.push({
        rank,
        locations: piece.locations,
        box,
        local,
        offset: piece.destOffset,
        strides: shardStrides,
        shardNumel,
      });
    });
  }
  shardsTile(frames, side, budget);
  validateHolders(frames, side, budget);
  return frames;
}

function groupByRank(frames: readonly MapFrame[]): Map<number, MapFrame[]> {
  const byRank = new Map<number, MapFrame[]>();
  for (const f of frames) {
    const list = byRank.get(f.rank);
    if (list) list.push(f);
    else byRank.set(f.rank, [f]);
  }
  return byRank;
}

/**
 * Proves each rank's pieces partition its shard by address, not merely by element count: three
 * pieces can cover disjoint runs of `F` while two land on the same shard addresses, and their
 * numels still sum to the shard size. Disjoint row-major boxes whose volumes sum to the shard's
 * volume fill it exactly once.
 */
function shardsTile(frames: readonly MapFrame[], side: string, budget: PlanBudget): void {
  for (const [rank, held] of [...groupByRank(frames)].sort((a, b) => a[0] - b[0])) {
    if (held.length * held.length > budget.maxPairChecks) {
      throw new PlanBudgetError(
        `${side}: rank ${rank} holds ${held.length} pieces, over the budget for address checks`,
      );
    }
    let volume = 0;
    for (let i = 0; i < held.length; i++) {
      volume += held[i].box.extent.reduce((a, b) => a * b, 1);
      for (let j = i + 1; j < held.length; j++) {
        if (boxesOverlap(held[i].local, held[j].local)) {
          throw new InvalidMapError(
            `${side}: rank ${rank} pieces ${boxToString(held[i].box)} and ${
              boxToString(held[j].box)
            } both occupy part of the same shard addresses`,
          );
        }
      }
    }
    if (volume !== held[0].shardNumel) {
      throw new InvalidMapError(
        `${side}: rank ${rank} pieces account for ${volume} of its ${held[0].shardNumel} ` +
          "shard elements",
      );
    }
  }
}

/** A piece's declared holders must be exactly the ranks holding all of its logical box. */
function validateHolders(frames: readonly MapFrame[], side: string, budget: PlanBudget): void {
  if (frames.length * frames.length > budget.maxPairChecks) {
    throw new PlanBudgetError(
      `${side}: holder checks exceed maxPairChecks ${budget.maxPairChecks}`,
    );
  }
  const byRank = groupByRank(frames);
  for (const [rank, held] of byRank) {
    for (let i = 0; i < held.length; i++) {
      for (let j = i + 1; j < held.length; j++) {
        if (boxesOverlap(held[i].box, held[j].box)) {
          throw new InvalidMapError(
            `${side}: rank ${rank} holds overlapping logical pieces ${boxToString(held[i].box)} ` +
              `and ${boxToString(held[j].box)}`,
          );
        }
      }
    }
  }
  for (const frame of frames) {
    const volume = frame.box.extent.reduce((a, b) => a * b, 1);
    const actual: number[] = [];
    for (const [rank, held] of byRank) {
      let covered = 0;
      for (const other of held) {
        if (boxesOverlap(frame.box, other.box)) {
          covered += boxIntersection(frame.box, other.box).extent.reduce((a, b) => a * b, 1);
        }
      }
      if (covered > 0) actual.push(rank);
      if (frame.locations.includes(rank) && covered !== volume) {
        throw new InvalidMapError(
          `${side}: rank ${rank} does not hold all of ${boxToString(frame.box)}`,
        );
      }
    }
    actual.sort((a, b) => a - b);
    if (actual.join(",") !== frame.locations.join(",")) {
      throw new InvalidMapError(
        `${side}: ${boxToString(frame.box)} has different locations: declares [${
          frame.locations.join(", ")
        }], held by [${actual.join(", ")}]`,
      );
    }
  }
}

/**
 * Whether the union of `boxes` covers `region`, by box subtraction (DeepSpeed `_covers_union`):
 * replica overlap is never counted twice and no element is enumerated.
 */
export function coversUnion(region: Box, boxes: readonly Box[], budget: PlanBudget): boolean {
  let uncovered: Box[] = region.extent.some((e) => e === 0) ? [] : [region];
  let checks = 0;
  for (const box of boxes) {
    if (uncovered.length === 0) return true;
    const remaining: Box[] = [];
    for (const gap of uncovered) {
      if (++checks > budget.maxPairChecks) {
        throw new PlanBudgetError(`coverage checks exceed maxPairChecks ${budget.maxPairChecks}`);
      }
      remaining.push(...boxSubtract(gap, box));
    }
    uncovered = remaining;
  }
  return uncovered.length === 0;
}

/**
 * Full planning validation of one map: {@link normalizeMap} plus coverage of `F` by the union of
 * its pieces. Returns the frames for reuse.
 *
 * @throws {InvalidMapError} e.g. "pieces do not cover the full logical parameter".
 */
export function validateMapForPlanning(
  map: ParamAffineMap,
  side = "map",
  budget: PlanBudget = DEFAULT_PLAN_BUDGET,
): MapFrame[] {
  const frames = normalizeMap(map, side, budget);
  const whole: Box = {
    origin: new Array(map.logicalShape.length).fill(0),
    extent: [...map.logicalShape],
  };
  if (!coversUnion(whole, frames.map((f) => f.box), budget)) {
    throw new InvalidMapError(`${side}: pieces do not cover the full logical parameter`);
  }
  return frames;
}
