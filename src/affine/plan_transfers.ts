/**
 * The batch transfer planner (DeepSpeed `plan_transfers`, PR #8936): composes source and target
 * affine maps of every parameter of one sync into direct shard-to-shard strided copies, asking
 * one replica policy about every region at once.
 *
 * Direction: a piece's `source` addresses `F` and its `dest` addresses the shard holding it, so
 * the read address in a source shard is the source piece's `dest` view. Every emitted address
 * points into a shard, in elements; bytes are `elements × elementSize`.
 *
 * @module
 */

import type { Box } from "./_box.ts";
import {
  boxesOverlap,
  boxIntersection,
  boxToString,
  compareCoords,
  forEachOverlapBetween,
  sweepAxis,
} from "./_box.ts";
import { coalesceOwned, type TransferSegmentDict } from "./_coalesce.ts";
import {
  AffineError,
  InvalidMapError,
  InvalidReplicaPolicyError,
  PlanBudgetError,
  UnsupportedLayoutError,
} from "./affine_errors.ts";
import type { ParamAffineMap } from "./map.ts";
import { numelOf, rowMajorStrides } from "./map.ts";
import { localFirstLeastLoaded, perRequest } from "./policies.ts";
import type { ReplicaHolder, ReplicaPolicy, ReplicaRequest } from "./policies.ts";
import { frameAddress, normalizeMapRegions, resolveBudget } from "./validate_map.ts";
import type { MapFrame, MapRegion, PlanBudget } from "./validate_map.ts";
export { coalesceSegments, compareSegments, type TransferSegmentDict } from "./_coalesce.ts";

/** A location → process mapping, as a `Map` or a record keyed by location. */
export type ProcessMapping = ReadonlyMap<number, number> | Readonly<Record<string, number>>;

/** What the planner looked at for one parameter (DeepSpeed `PlanStatistics`). */
export interface PlanStatistics {
  /** Distinct source regions. */
  sourcePieces: number;
  /** Non-empty target pieces. */
  targetPieces: number;
  /** Source regions × target pieces. */
  pairChecks: number;
  /** Requests the policy answered for this parameter. */
  requests: number;
  /** Segments emitted before coalescing. */
  segmentsBeforeMerge: number;
  /** Segments after coalescing. */
  segments: number;
  /** Bytes of the segment list as compact JSON with sorted keys (DeepSpeed `plan_bytes`). */
  planBytes: number;
}

/** The plan of one parameter. */
export interface ParameterPlan {
  /** Parameter name. */
  name: string;
  /** Shape of the logical tensor. */
  logicalShape: number[];
  /** Bytes per element used for requests. */
  elementSize: number;
  /**
   * Coalesced segments in deterministic order, segment for segment DeepSpeed's. Segments of one
   * shard share its stride vector: treat them as read-only.
   */
  segments: TransferSegmentDict[];
  /** Sum of the segments' element counts. */
  movedElements: number;
  /** Planner statistics. */
  statistics: PlanStatistics;
}

/** The plan of one sync: every parameter, planned together. */
export interface TransferPlans {
  /** Plans keyed by parameter name, in planning order (names sorted). */
  parameters: Map<string, ParameterPlan>;
  /** Number of requests the policy answered. */
  requests: number;
  /** Number of requests answered with a split into more than one part. */
  splitRequests: number;
}

/** A source/target map pair of one parameter. */
export interface MapPair {
  /** The layout the bytes are in now. */
  source: ParamAffineMap;
  /** The layout they are to be in. */
  target: ParamAffineMap;
}

/** Options of {@link planTransfers}. */
export interface PlanTransfersOptions {
  /** Planning limits (missing fields take DeepSpeed's defaults). */
  budget?: Partial<PlanBudget>;
  /** Source location → process; must name every source location when given. */
  sourceProcesses?: ProcessMapping;
  /** Target location → process; must name every target location when given. */
  targetProcesses?: ProcessMapping;
  /** Bytes per element: one number, or one per parameter (default 1). */
  elementSize?: number | Readonly<Record<string, number>> | ReadonlyMap<string, number>;
  /** Every part of a split must be at least this many bytes (default 0: off). */
  minSplitBytes?: number;
  /** The replica policy (default: `localFirstLeastLoaded`). */
  policy?: ReplicaPolicy;
}

/** Converts a {@link ProcessMapping} to a `Map`, or undefined when absent. */
export function toProcessMap(mapping?: ProcessMapping): Map<number, number> | undefined {
  if (mapping === undefined) return undefined;
  if (mapping instanceof Map) return new Map(mapping);
  const out = new Map<number, number>();
  for (const [k, v] of Object.entries(mapping as Record<string, number>)) out.set(Number(k), v);
  return out;
}

/**
 * A request as the planner keeps it: the target frame and source region it intersects, from
 * which the region is recomputed when needed, beyond a policy's reach.
 */
interface PendingRequest {
  param: number;
  /** Row-major address of the region's origin in `F`: orders origins as coordinates do. */
  at: number;
  target: MapFrame;
  /** The source region; its frames are the validated holders. */
  source: MapRegion;
  request: ReplicaRequest;
}

/** The requested region: the target frame's box within the source region's. */
function sharedOf(pending: PendingRequest): Box {
  return boxIntersection(pending.target.box, pending.source.box);
}

interface PreparedParameter {
  name: string;
  logicalShape: number[];
  elementSize: number;
  sourcePieces: number;
  targetPieces: number;
  pairChecks: number;
  pending: PendingRequest[];
}

function elementSizeOf(options: PlanTransfersOptions, name: string): number {
  const e = options.elementSize;
  let size: number | undefined;
  if (e === undefined) size = 1;
  else if (typeof e === "number") size = e;
  else if (e instanceof Map) size = e.get(name);
  else size = (e as Record<string, number>)[name];
  if (typeof size !== "number" || !Number.isInteger(size) || size <= 0) {
    throw new AffineError(`elementSize: no positive integer size for parameter ${name}`);
  }
  return size;
}

function checkProcesses(
  mapping: Map<number, number> | undefined,
  map: ParamAffineMap,
  which: string,
  name: string,
): void {
  if (!mapping) return;
  for (const rank of map.ranks.keys()) {
    const p = mapping.get(rank);
    if (typeof p !== "number" || !Number.isInteger(p)) {
      throw new AffineError(`${which}: no process for location ${rank} of parameter ${name}`);
    }
  }
}

function pairsOf(
  pairs: ReadonlyMap<string, MapPair> | Readonly<Record<string, MapPair>>,
): [string, MapPair][] {
  const entries = pairs instanceof Map
    ? [...pairs.entries()]
    : Object.entries(pairs as Record<string, MapPair>);
  // Code-unit order, so every rank sees the same order whatever order the pairs were built in.
  return entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/** Below this many pairs, checking all of them is cheaper than sorting for a sweep. */
const ALL_PAIRS_BELOW = 64;

/**
 * Calls `visit(t, s)` for every target frame and source region that share an element: a sweep
 * of both sorted lists along one axis, or all pairs when there are few.
 */
function forEachIntersection(
  targets: readonly MapFrame[],
  regions: readonly MapRegion[],
  visit: (t: number, s: number) => void,
): void {
  if (targets.length * regions.length < ALL_PAIRS_BELOW) {
    for (let t = 0; t < targets.length; t++) {
      for (let s = 0; s < regions.length; s++) {
        if (boxesOverlap(targets[t].box, regions[s].box)) visit(t, s);
      }
    }
    return;
  }
  const a = targets.map((f) => f.box), b = regions.map((r) => r.box);
  forEachOverlapBetween(a, b, sweepAxis(a, b), visit);
}

function prepare(
  name: string,
  pair: MapPair,
  index: number,
  options: PlanTransfersOptions,
  budget: PlanBudget,
  sourceProcesses: Map<number, number> | undefined,
  targetProcesses: Map<number, number> | undefined,
): PreparedParameter {
  const { source, target } = pair;
  if (compareCoords(source.logicalShape, target.logicalShape) !== 0) {
    throw new InvalidMapError(
      `${name}: source describes ${JSON.stringify(source.logicalShape)} and target describes ` +
        JSON.stringify(target.logicalShape),
    );
  }
  checkProcesses(sourceProcesses, source, "sourceProcesses", name);
  checkProcesses(targetProcesses, target, "targetProcesses", name);
  const elementSize = elementSizeOf(options, name);
  const logicalShape = [...target.logicalShape];
  const logicalStrides = rowMajorStrides(logicalShape);
  const full = numelOf(logicalShape);
  const src = normalizeMapRegions(source, `${name}: source`, budget);
  const regions = src.regions;
  // DeepSpeed `_sources`: the budget is spent on distinct regions squared, checked first.
  if (regions.length * regions.length > budget.maxPairChecks) {
    throw new PlanBudgetError(
      `${name}: ${regions.length} source regions would take ${regions.length ** 2} checks, over ` +
        `maxPairChecks ${budget.maxPairChecks}`,
    );
  }
  if (src.overlappingRegions !== null) {
    // Distinct overlapping boxes are replicas with different piece boundaries, which this
    // planner does not express.
    const [i, j] = src.overlappingRegions;
    throw new UnsupportedLayoutError(
      `${name}: source: replicas of ${boxToString(regions[i].box)} and ` +
        `${boxToString(regions[j].box)} have different piece boundaries`,
    );
  }
  const tgt = normalizeMapRegions(target, `${name}: target`, budget);
  const targets = tgt.frames;
  let sourceVolume = 0;
  for (let i = 0; i < regions.length; i++) sourceVolume += numelOf(regions[i].box.extent);
  if (sourceVolume !== full) {
    throw new InvalidMapError(
      `${name}: source pieces cover ${sourceVolume} of its ${full} logical elements`,
    );
  }
  if (tgt.coveredVolume !== full) {
    throw new InvalidMapError(`${name}: target pieces do not cover the full logical parameter`);
  }
  const pairChecks = regions.length * targets.length;
  if (pairChecks > budget.maxPairChecks) {
    throw new PlanBudgetError(
      `${name}: ${pairChecks} candidate pairs exceeds maxPairChecks ${budget.maxPairChecks}`,
    );
  }
  const holderLists = holderListsOf(regions, sourceProcesses);
  const pending: PendingRequest[] = [];
  const filled: number[] = new Array(targets.length).fill(0);
  forEachIntersection(targets, regions, (t, s) => {
    const frame = targets[t];
    const { origin, extent } = boxIntersection(frame.box, regions[s].box);
    const n = numelOf(extent);
    filled[t] += n;
    let at = 0;
    for (let k = 0; k < origin.length; k++) at += origin[k] * logicalStrides[k];
    // The policy's own arrays: the planner recomputes the region from the frames.
    const request: ReplicaRequest = {
      parameter: name,
      targetLocation: frame.rank,
      logicalOrigin: origin,
      shape: extent,
      bytes: n * elementSize,
      holders: holderLists[s],
    };
    if (targetProcesses) request.targetProcess = targetProcesses.get(frame.rank);
    pending.push({ param: index, at, target: frame, source: regions[s], request });
  });
  checkTiled(name, targets, filled);
  // A rank's target pieces are logically disjoint, so (rank, origin) orders requests totally.
  const order = (a: PendingRequest, b: PendingRequest) =>
    a.target.rank - b.target.rank || a.at - b.at;
  let sorted = true;
  for (let i = 1; sorted && i < pending.length; i++) sorted = order(pending[i - 1], pending[i]) < 0;
  if (!sorted) pending.sort(order);
  return {
    name,
    logicalShape,
    elementSize,
    sourcePieces: regions.length,
    targetPieces: targets.length,
    pairChecks,
    pending,
  };
}

/**
 * The holders of each source region: one holder per location and one list per region, shared by
 * every request reading it; a single-holder list is shared by every region of its location.
 */
function holderListsOf(
  regions: ReturnType<typeof normalizeMapRegions>["regions"],
  sourceProcesses: Map<number, number> | undefined,
): ReplicaHolder[][] {
  const holderOf = new Map<number, ReplicaHolder>();
  const alone = new Map<number, ReplicaHolder[]>();
  const holder = (rank: number) => {
    let h = holderOf.get(rank);
    if (h === undefined) {
      h = { location: rank };
      if (sourceProcesses) h.process = sourceProcesses.get(rank);
      holderOf.set(rank, h);
    }
    return h;
  };
  const holderLists: ReplicaHolder[][] = new Array(regions.length);
  for (let i = 0; i < regions.length; i++) {
    const held = regions[i].frames;
    if (held.length === 1) {
      let list = alone.get(held[0].rank);
      if (list === undefined) alone.set(held[0].rank, list = [holder(held[0].rank)]);
      holderLists[i] = list;
    } else holderLists[i] = held.map((f) => holder(f.rank));
  }
  return holderLists;
}

/**
 * Source regions are disjoint, so the parts are disjoint: they tile the target region exactly
 * when their volumes sum to it. A total over the whole plan would prove nothing.
 */
function checkTiled(
  name: string,
  targets: ReturnType<typeof normalizeMapRegions>["frames"],
  filled: number[],
): void {
  for (let t = 0; t < targets.length; t++) {
    const frame = targets[t];
    if (filled[t] !== numelOf(frame.box.extent)) {
      throw new InvalidMapError(
        `${name}: target rank ${frame.rank} region ${boxToString(frame.box)} would receive ` +
          `${filled[t]} of its ${numelOf(frame.box.extent)} elements`,
      );
    }
  }
}

function describe(request: ReplicaRequest, index: number): string {
  return `request ${index} (${request.parameter}, target ${request.targetLocation}, origin ` +
    `[${request.logicalOrigin.join(", ")}], shape [${request.shape.join(", ")}])`;
}

function isLocation(v: unknown): v is number {
  return typeof v === "number" && Number.isInteger(v);
}

/** Reads a coordinate field of a part without letting a raw TypeError escape. */
function coordinates(v: unknown, where: string, field: string): number[] {
  if (v === null || v === undefined || typeof v === "string" || typeof v !== "object") {
    throw new InvalidReplicaPolicyError(
      `${where}: ${field} ${String(v)} is not iterable coordinates`,
    );
  }
  if (typeof (v as { [Symbol.iterator]?: unknown })[Symbol.iterator] !== "function") {
    throw new InvalidReplicaPolicyError(`${where}: ${field} is not iterable coordinates`);
  }
  let out: unknown[];
  try {
    out = [...(v as Iterable<unknown>)];
  } catch (e) {
    throw new InvalidReplicaPolicyError(`${where}: ${field} could not be read: ${e}`);
  }
  for (const x of out) {
    if (!isLocation(x)) {
      throw new InvalidReplicaPolicyError(`${where}: ${field} holds ${String(x)}, not an integer`);
    }
  }
  return out as number[];
}

interface ResolvedPart {
  holder: MapFrame;
  box: Box;
}

function holderAt(holders: readonly MapFrame[], location: unknown): MapFrame | undefined {
  if (!isLocation(location)) return undefined;
  for (let i = 0; i < holders.length; i++) if (holders[i].rank === location) return holders[i];
  return undefined;
}

function holderList(holders: readonly MapFrame[]): string {
  return holders.map((h) => h.rank).join(", ");
}

/** One part of a policy's split answer: a validated holder and an axis-0 slice of `region`. */
function parsePart(raw: unknown, at: string, pending: PendingRequest, region: Box): ResolvedPart {
  const nd = region.origin.length;
  if (typeof raw !== "object" || raw === null) {
    throw new InvalidReplicaPolicyError(`${at}: ${String(raw)} is not a part`);
  }
  const part = raw as Record<string, unknown>;
  const holder = holderAt(pending.source.frames, part.sourceLocation);
  if (holder === undefined) {
    throw new InvalidReplicaPolicyError(
      `${at}: location ${String(part.sourceLocation)} is not a validated holder [${
        holderList(pending.source.frames)
      }]`,
    );
  }
  const origin = coordinates(part.logicalOrigin, at, "logicalOrigin");
  const shape = coordinates(part.shape, at, "shape");
  if (origin.length !== nd || shape.length !== nd) {
    throw new InvalidReplicaPolicyError(
      `${at}: ${origin.length}-axis origin and ${shape.length}-axis shape for a ${nd}-axis region`,
    );
  }
  if (shape.some((s) => s <= 0)) throw new InvalidReplicaPolicyError(`${at}: empty part`);
  for (let axis = 1; axis < nd; axis++) {
    if (origin[axis] !== region.origin[axis] || shape[axis] !== region.extent[axis]) {
      throw new InvalidReplicaPolicyError(
        `${at}: cuts axis ${axis}; only axis-0 splits are supported`,
      );
    }
  }
  return { holder, box: { origin, extent: shape } };
}

/**
 * Checks one answer and resolves it: the holder frame for a location, or holder parts tiling the
 * request along axis 0. Messages are built only when an answer is refused.
 */
function resolveAnswer(
  pending: PendingRequest,
  answer: unknown,
  index: number,
  minSplitBytes: number,
  elementSize: number,
): MapFrame | ResolvedPart[] {
  if (typeof answer === "number") {
    const holder = holderAt(pending.source.frames, answer);
    if (holder === undefined) {
      throw new InvalidReplicaPolicyError(
        `${describe(pending.request, index)}: location ${answer} is not a validated holder [${
          holderList(pending.source.frames)
        }]`,
      );
    }
    return holder;
  }
  if (!Array.isArray(answer)) {
    throw new InvalidReplicaPolicyError(
      `${describe(pending.request, index)}: answer ${
        JSON.stringify(answer) ?? String(answer)
      } is neither a holder ` +
        "location nor a list of parts",
    );
  }
  if (answer.length === 0) {
    throw new InvalidReplicaPolicyError(`${describe(pending.request, index)}: answer has no parts`);
  }
  const region = sharedOf(pending);
  const nd = region.origin.length;
  const parts = answer.map((raw, p) =>
    parsePart(raw, `${describe(pending.request, index)} part ${p}`, pending, region)
  );
  if (nd === 0) {
    if (parts.length !== 1) {
      throw new InvalidReplicaPolicyError(
        `${describe(pending.request, index)}: a scalar region cannot be split`,
      );
    }
    return parts;
  }
  const sorted = [...parts].sort((a, b) => a.box.origin[0] - b.box.origin[0]);
  let cursor = region.origin[0];
  const end = region.origin[0] + region.extent[0];
  for (const part of sorted) {
    const start = part.box.origin[0], stop = start + part.box.extent[0];
    if (start < region.origin[0] || stop > end) {
      throw new InvalidReplicaPolicyError(
        `${
          describe(pending.request, index)
        }: part rows [${start}, ${stop}) fall outside the region rows ` +
          `[${region.origin[0]}, ${end})`,
      );
    }
    if (start > cursor) {
      throw new InvalidReplicaPolicyError(
        `${describe(pending.request, index)}: rows [${cursor}, ${start}) have no part (gap)`,
      );
    }
    if (start < cursor) {
      throw new InvalidReplicaPolicyError(
        `${describe(pending.request, index)}: parts overlap at row ${start}`,
      );
    }
    cursor = stop;
  }
  if (cursor !== end) {
    throw new InvalidReplicaPolicyError(
      `${describe(pending.request, index)}: rows [${cursor}, ${end}) have no part (gap)`,
    );
  }
  if (minSplitBytes > 0 && sorted.length > 1) {
    for (const part of sorted) {
      const bytes = numelOf(part.box.extent) * elementSize;
      if (bytes < minSplitBytes) {
        throw new InvalidReplicaPolicyError(
          `${describe(pending.request, index)}: part at row ${
            part.box.origin[0]
          } is ${bytes} bytes, under minSplitBytes ` +
            `${minSplitBytes}`,
        );
      }
    }
  }
  return sorted;
}

/**
 * A fresh segment reading `box` from `holder` into `target`. `shape` becomes the segment's own
 * (coalescing grows it in place); the stride vectors are the shards' and may be shared.
 */
function segmentOf(
  target: MapFrame,
  holder: MapFrame,
  origin: readonly number[],
  shape: number[],
): TransferSegmentDict {
  return {
    shape,
    source: [holder.rank, frameAddress(holder, origin), holder.strides as number[]],
    target: [target.rank, frameAddress(target, origin), target.strides as number[]],
  };
}

/** A fresh segment reading all of `target`'s box within `region` from `holder`, no temporaries. */
function wholeSegment(target: MapFrame, holder: MapFrame, region: Box): TransferSegmentDict {
  const tb = target.box, nd = tb.origin.length;
  const shape = new Array<number>(nd);
  let sourceOffset = holder.offset, targetOffset = target.offset;
  for (let k = 0; k < nd; k++) {
    const low = tb.origin[k] > region.origin[k] ? tb.origin[k] : region.origin[k];
    const te = tb.origin[k] + tb.extent[k], re = region.origin[k] + region.extent[k];
    shape[k] = (te < re ? te : re) - low;
    sourceOffset += (low - holder.box.origin[k]) * holder.strides[k];
    targetOffset += (low - tb.origin[k]) * target.strides[k];
  }
  return {
    shape,
    source: [holder.rank, sourceOffset, holder.strides as number[]],
    target: [target.rank, targetOffset, target.strides as number[]],
  };
}

function decimalLength(n: number): number {
  if (n < 0) return 1 + decimalLength(-n);
  if (n < 1e4) return n < 10 ? 1 : n < 100 ? 2 : n < 1e3 ? 3 : 4;
  if (n < 1e8) return n < 1e5 ? 5 : n < 1e6 ? 6 : n < 1e7 ? 7 : 8;
  if (n < 1e12) return n < 1e9 ? 9 : n < 1e10 ? 10 : n < 1e11 ? 11 : 12;
  return String(n).length;
}

function listLength(values: readonly number[]): number {
  let n = 2 + Math.max(0, values.length - 1);
  for (let i = 0; i < values.length; i++) n += decimalLength(values[i]);
  return n;
}

/**
 * Bytes of the segment list as DeepSpeed's `_plan_bytes` measures them (compact JSON with sorted
 * keys: `[{"shape":[..],"source":[r,o,[..]],"target":[r,o,[..]]},...]`), counted without
 * serialising.
 */
export function planBytesOf(segments: readonly TransferSegmentDict[]): number {
  // `{"shape":` + `,"source":[` + `,` + `,` + `]` + `,"target":[` + `,` + `,` + `]` + `}`.
  const fixed = 9 + 11 + 1 + 1 + 1 + 11 + 1 + 1 + 1 + 1;
  let n = 2 + Math.max(0, segments.length - 1);
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i];
    n += fixed + listLength(s.shape) +
      decimalLength(s.source[0]) + decimalLength(s.source[1]) + listLength(s.source[2]) +
      decimalLength(s.target[0]) + decimalLength(s.target[1]) + listLength(s.target[2]);
  }
  return n;
}

/** One parameter's plan: its segments coalesced, within the budget, with their statistics. */
function parameterPlan(
  p: PreparedParameter,
  raw: TransferSegmentDict[],
  budget: PlanBudget,
): ParameterPlan {
  const before = raw.length;
  const segments = coalesceOwned(raw, budget);
  if (segments.length > budget.maxSegments) {
    throw new PlanBudgetError(
      `${p.name}: ${segments.length} segments exceeds maxSegments ${budget.maxSegments}`,
    );
  }
  const planBytes = planBytesOf(segments);
  if (planBytes > budget.maxPlanBytes) {
    throw new PlanBudgetError(
      `${p.name}: plan metadata is ${planBytes} bytes, over maxPlanBytes ${budget.maxPlanBytes}`,
    );
  }
  let movedElements = 0;
  for (let k = 0; k < segments.length; k++) movedElements += numelOf(segments[k].shape);
  return {
    name: p.name,
    logicalShape: p.logicalShape,
    elementSize: p.elementSize,
    segments,
    movedElements,
    statistics: {
      sourcePieces: p.sourcePieces,
      targetPieces: p.targetPieces,
      pairChecks: p.pairChecks,
      requests: p.pending.length,
      segmentsBeforeMerge: before,
      segments: segments.length,
      planBytes,
    },
  };
}

/**
 * Plans every parameter of one sync together (DeepSpeed `plan_transfers`).
 *
 * Each map is validated first ({@link normalizeMapRegions}); then every (target piece, source
 * region) intersection becomes one {@link ReplicaRequest} — single-holder regions included, so a
 * policy sees load it cannot move — in the fixed order (parameter name, target location,
 * origin). The policy is called once with all of them. Every answer is checked before any
 * segment is emitted: one answer per request; a holder location must be an integer naming a
 * validated holder (booleans, floats, null and strings are refused); parts must be objects with
 * a validated `sourceLocation` and integer coordinate fields, have the region's number of axes,
 * be non-empty, cut only axis 0 and tile the region exactly (no gap, overlap or part outside);
 * with `minSplitBytes`, every part of a split is at least that large; and the parts of one
 * parameter (a holder answer counts one) stay within `budget.maxPairChecks`, decided from each
 * answer's length before its parts are read and accumulated across requests. Any refusal raises
 * {@link InvalidReplicaPolicyError}. Segments are then coalesced as DeepSpeed coalesces them
 * ({@link coalesceSegments}) and sorted.
 *
 * Cost: validation and intersection sweep sorted boxes along one axis (`n log n` in pieces plus
 * the pairs overlapping on that axis), coalescing looks candidates up by address, and the plan's
 * byte size is counted without serialising it. Request `holders` lists are shared between the
 * requests reading one region, and segments of one shard share its stride vector: treat both as
 * read-only.
 *
 * @throws {InvalidMapError} a map contradicts itself or the other map.
 * @throws {UnsupportedLayoutError} geometry the planner does not express.
 * @throws {InvalidReplicaPolicyError} the policy's answers are refused.
 * @throws {PlanBudgetError} a planning limit is exhausted.
 */
export function planTransfers(
  pairs: ReadonlyMap<string, MapPair> | Readonly<Record<string, MapPair>>,
  options: PlanTransfersOptions = {},
): TransferPlans {
  const budget = resolveBudget(options.budget);
  const minSplitBytes = options.minSplitBytes ?? 0;
  if (!Number.isFinite(minSplitBytes) || minSplitBytes < 0) {
    throw new AffineError(`minSplitBytes must be a non-negative number, got ${minSplitBytes}`);
  }
  const sourceProcesses = toProcessMap(options.sourceProcesses);
  const targetProcesses = toProcessMap(options.targetProcesses);
  const prepared = pairsOf(pairs).map(([name, pair], i) =>
    prepare(name, pair, i, options, budget, sourceProcesses, targetProcesses)
  );
  let total = 0;
  for (let i = 0; i < prepared.length; i++) total += prepared[i].pending.length;
  const all: PendingRequest[] = new Array(total);
  const requests: ReplicaRequest[] = new Array(total);
  let at = 0;
  for (let i = 0; i < prepared.length; i++) {
    const list = prepared[i].pending;
    for (let k = 0; k < list.length; k++) {
      all[at] = list[k];
      requests[at++] = list[k].request;
    }
  }
  const policy = options.policy ?? localFirstLeastLoaded;
  const answers = policy(requests, { minSplitBytes });
  if (!Array.isArray(answers)) {
    throw new InvalidReplicaPolicyError("policy returned something other than a list of answers");
  }
  if (answers.length !== requests.length) {
    throw new InvalidReplicaPolicyError(
      `policy returned ${answers.length} answers for ${requests.length} requests`,
    );
  }
  const partsPerParam = new Array<number>(prepared.length).fill(0);
  const resolved: (MapFrame | ResolvedPart[])[] = new Array(all.length);
  let splitRequests = 0;
  for (let i = 0; i < all.length; i++) {
    const pending = all[i];
    const answer = answers[i];
    if (typeof answer === "boolean") {
      throw new InvalidReplicaPolicyError(
        `${describe(pending.request, i)}: ${answer} is a boolean, not a holder location`,
      );
    }
    // Decided from the length, before a single part is read.
    const count = Array.isArray(answer) ? answer.length : 1;
    partsPerParam[pending.param] += count;
    if (partsPerParam[pending.param] > budget.maxPairChecks) {
      throw new InvalidReplicaPolicyError(
        `${describe(pending.request, i)}: parameter ${pending.request.parameter} would have ` +
          `${partsPerParam[pending.param]} parts, over maxPairChecks ${budget.maxPairChecks}`,
      );
    }
    const r = resolveAnswer(pending, answer, i, minSplitBytes, prepared[pending.param].elementSize);
    resolved[i] = r;
    if (Array.isArray(r) && r.length > 1) splitRequests++;
  }
  const raw: TransferSegmentDict[][] = prepared.map(() => []);
  for (let i = 0; i < all.length; i++) {
    const pending = all[i];
    const r = resolved[i];
    const list = raw[pending.param];
    if (!Array.isArray(r)) {
      list.push(wholeSegment(pending.target, r, pending.source.box));
      continue;
    }
    for (const part of r) {
      list.push(segmentOf(pending.target, part.holder, part.box.origin, part.box.extent));
    }
  }
  const parameters = new Map<string, ParameterPlan>();
  prepared.forEach((p, i) => parameters.set(p.name, parameterPlan(p, raw[i], budget)));
  return { parameters, requests: all.length, splitRequests };
}

/** Result of {@link planTransfer}: one parameter's plan in DeepSpeed `TransferPlan` terms. */
export interface SinglePlan {
  /** Shape of the logical tensor. */
  logicalShape: number[];
  /** Coalesced segments in deterministic order. */
  segments: TransferSegmentDict[];
  /** Sum of the segments' element counts. */
  movedElements: number;
  /** Planner statistics. */
  statistics: PlanStatistics;
}

/** Options of {@link planTransfer}. */
export interface PlanTransferOptions {
  /** Picks a holder location for a region with several holders (default: the lowest). */
  selector?: (request: ReplicaRequest) => number;
  /** Planning limits. */
  budget?: Partial<PlanBudget>;
}

/**
 * Plans one parameter (DeepSpeed v2 `plan_transfer(target_map, source_map, replica_selector=)`;
 * note the argument order, target first). Without a selector the lowest holder is read.
 */
export function planTransfer(
  target: ParamAffineMap,
  source: ParamAffineMap,
  options: PlanTransferOptions = {},
): SinglePlan {
  const selector = options.selector ?? ((r: ReplicaRequest) => r.holders[0].location);
  const plans = planTransfers({ parameter: { source, target } }, {
    budget: options.budget,
    policy: perRequest(selector),
  });
  const p = plans.parameters.get("parameter")!;
  return {
    logicalShape: p.logicalShape,
    segments: p.segments,
    movedElements: p.movedElements,
    statistics: p.statistics,
  };
}
