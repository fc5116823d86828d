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
import { boxesOverlap, boxIntersection, boxKey, boxToString, compareCoords } from "./_box.ts";
import {
  AffineError,
  InvalidMapError,
  InvalidReplicaPolicyError,
  PlanBudgetError,
  UnsupportedLayoutError,
} from "./affine_errors.ts";
import type { ParamAffineMap } from "./map.ts";
import { numelOf } from "./map.ts";
import { localFirstLeastLoaded, perRequest } from "./policies.ts";
import { coversUnion, frameAddress, normalizeMap, resolveBudget } from "./validate_map.ts";
import type { MapFrame, PlanBudget } from "./validate_map.ts";

/** One holder of a requested region: its map location and, when mapped, its process. */
export interface ReplicaHolder {
  /** Source map location (rank) holding the region. */
  location: number;
  /** Process behind the location, present only when `sourceProcesses` was given. */
  process?: number;
}

/** One region a target location needs, with its validated holders (DeepSpeed `ReplicaRequest`). */
export interface ReplicaRequest {
  /** Parameter name. */
  parameter: string;
  /** Target map location receiving the region. */
  targetLocation: number;
  /** Process behind the target location, present only when `targetProcesses` was given. */
  targetProcess?: number;
  /** First logical coordinate of the region. */
  logicalOrigin: number[];
  /** Extent of the region. */
  shape: number[];
  /** Size of the region in bytes (`numel × elementSize`). */
  bytes: number;
  /** Validated holders, sorted by location. */
  holders: ReplicaHolder[];
}

/** One part of a split answer: a slab of the region along axis 0 read from one holder. */
export interface ReplicaPart {
  /** Holder location to read this part from. */
  sourceLocation: number;
  /** First logical coordinate of the part. */
  logicalOrigin: number[];
  /** Extent of the part (equal to the region's on every axis but 0). */
  shape: number[];
}

/** A policy's answer for one request: a holder location, or parts cutting the region on axis 0. */
export type ReplicaAnswer = number | readonly ReplicaPart[];

/** What the planner tells a policy besides the requests. */
export interface PolicyContext {
  /** Smallest allowed part of a split, in bytes (0: no limit). */
  minSplitBytes: number;
}

/**
 * A batch replica policy: called once per sync with every request, in the fixed order
 * (parameter, target location, origin); returns one answer per request. Must be deterministic:
 * every rank has to reach the same answers from the same requests.
 */
export type ReplicaPolicy = (
  requests: readonly ReplicaRequest[],
  context: PolicyContext,
) => unknown;

/** A location → process mapping, as a `Map` or a record keyed by location. */
export type ProcessMapping = ReadonlyMap<number, number> | Readonly<Record<string, number>>;

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
  /** Bytes of the compact JSON `{logical_shape, segments}`. */
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
  /** Coalesced segments in deterministic order. */
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

interface SourceRegion {
  box: Box;
  holders: MapFrame[];
}

interface PendingRequest {
  param: number;
  target: MapFrame;
  shared: Box;
  holders: MapFrame[];
  request: ReplicaRequest;
}

interface PreparedParameter {
  name: string;
  logicalShape: number[];
  elementSize: number;
  sources: SourceRegion[];
  targets: MapFrame[];
  pairChecks: number;
  pending: PendingRequest[];
}

/**
 * Groups the source frames by identical logical box: each region keeps its validated holders.
 * Distinct overlapping boxes mean replicas with different piece boundaries, which this planner
 * does not express.
 */
function sourceRegions(frames: MapFrame[], budget: PlanBudget): SourceRegion[] {
  const byKey = new Map<string, SourceRegion>();
  for (const f of frames) {
    const key = boxKey(f.box);
    const region = byKey.get(key);
    if (region) region.holders.push(f);
    else byKey.set(key, { box: f.box, holders: [f] });
  }
  const regions = [...byKey.values()].sort((a, b) =>
    compareCoords(a.box.origin, b.box.origin) || compareCoords(a.box.extent, b.box.extent)
  );
  if (regions.length * regions.length > budget.maxPairChecks) {
    throw new PlanBudgetError(
      `${regions.length} source regions would take ${regions.length ** 2} checks, over ` +
        `maxPairChecks ${budget.maxPairChecks}`,
    );
  }
  // Sorted by origin on axis 0 first, so only regions starting before this one ends can overlap.
  for (let i = 0; i < regions.length; i++) {
    const a = regions[i].box;
    for (let j = i + 1; j < regions.length; j++) {
      const b = regions[j].box;
      if (b.origin.length > 0 && b.origin[0] >= a.origin[0] + a.extent[0]) break;
      if (boxesOverlap(a, b)) {
        throw new UnsupportedLayoutError(
          `source: replicas of ${boxToString(a)} and ${boxToString(b)} have different piece ` +
            "boundaries",
        );
      }
    }
    regions[i].holders.sort((x, y) => x.rank - y.rank);
  }
  return regions;
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
  const where = (side: string) => `${name}: ${side}`;
  const sources = sourceRegions(normalizeMap(source, where("source"), budget), budget);
  const targets = normalizeMap(target, where("target"), budget);
  const whole: Box = { origin: logicalShape.map(() => 0), extent: [...logicalShape] };
  const sourceVolume = sources.reduce((s, r) => s + numelOf(r.box.extent), 0);
  if (sourceVolume !== numelOf(logicalShape)) {
    throw new InvalidMapError(
      `${where("source")} pieces cover ${sourceVolume} of its ${numelOf(logicalShape)} logical ` +
        "elements",
    );
  }
  if (!coversUnion(whole, targets.map((f) => f.box), budget)) {
    throw new InvalidMapError(`${where("target")} pieces do not cover the full logical parameter`);
  }
  const pairChecks = sources.length * targets.length;
  if (pairChecks > budget.maxPairChecks) {
    throw new PlanBudgetError(
      `${name}: ${pairChecks} candidate pairs exceeds maxPairChecks ${budget.maxPairChecks}`,
    );
  }
  const pending: PendingRequest[] = [];
  for (const frame of targets) {
    let filled = 0;
    for (const region of sources) {
      if (!boxesOverlap(frame.box, region.box)) continue;
      const shared = boxIntersection(frame.box, region.box);
      const n = numelOf(shared.extent);
      filled += n;
      const request: ReplicaRequest = {
        parameter: name,
        targetLocation: frame.rank,
        logicalOrigin: [...shared.origin],
        shape: [...shared.extent],
        bytes: n * elementSize,
        holders: region.holders.map((h) => {
          const holder: ReplicaHolder = { location: h.rank };
          if (sourceProcesses) holder.process = sourceProcesses.get(h.rank);
          return holder;
        }),
      };
      if (targetProcesses) request.targetProcess = targetProcesses.get(frame.rank);
      pending.push({ param: index, target: frame, shared, holders: region.holders, request });
    }
    // Source regions are disjoint, so the parts are disjoint: they tile the target region
    // exactly when their volumes sum to it. A total over the whole plan would prove nothing.
    if (filled !== numelOf(frame.box.extent)) {
      throw new InvalidMapError(
        `${name}: target rank ${frame.rank} region ${boxToString(frame.box)} would receive ` +
          `${filled} of its ${numelOf(frame.box.extent)} elements`,
      );
    }
  }
  pending.sort((a, b) =>
    a.target.rank - b.target.rank || compareCoords(a.shared.origin, b.shared.origin)
  );
  return { name, logicalShape, elementSize, sources, targets, pairChecks, pending };
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
  location: number;
  box: Box;
}

/** Checks one answer and resolves it to holder parts that tile the request along axis 0. */
function resolveAnswer(
  pending: PendingRequest,
  answer: unknown,
  index: number,
  minSplitBytes: number,
  elementSize: number,
): ResolvedPart[] {
  const request = pending.request;
  const where = describe(request, index);
  const holders = new Set(pending.holders.map((h) => h.rank));
  const region = pending.shared;
  if (typeof answer === "number") {
    if (!isLocation(answer) || !holders.has(answer)) {
      throw new InvalidReplicaPolicyError(
        `${where}: location ${answer} is not a validated holder [${[...holders].join(", ")}]`,
      );
    }
    return [{ location: answer, box: region }];
  }
  if (!Array.isArray(answer)) {
    throw new InvalidReplicaPolicyError(
      `${where}: answer ${JSON.stringify(answer) ?? String(answer)} is neither a holder ` +
        "location nor a list of parts",
    );
  }
  if (answer.length === 0) throw new InvalidReplicaPolicyError(`${where}: answer has no parts`);
  const nd = region.origin.length;
  const parts: ResolvedPart[] = answer.map((raw, p) => {
    const at = `${where} part ${p}`;
    if (typeof raw !== "object" || raw === null) {
      throw new InvalidReplicaPolicyError(`${at}: ${String(raw)} is not a part`);
    }
    const part = raw as Record<string, unknown>;
    const location = part.sourceLocation;
    if (!isLocation(location) || !holders.has(location)) {
      throw new InvalidReplicaPolicyError(
        `${at}: location ${String(location)} is not a validated holder [${
          [...holders].join(", ")
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
    return { location, box: { origin, extent: shape } };
  });
  if (nd === 0) {
    if (parts.length !== 1) {
      throw new InvalidReplicaPolicyError(`${where}: a scalar region cannot be split`);
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
        `${where}: part rows [${start}, ${stop}) fall outside the region rows ` +
          `[${region.origin[0]}, ${end})`,
      );
    }
    if (start > cursor) {
      throw new InvalidReplicaPolicyError(
        `${where}: rows [${cursor}, ${start}) have no part (gap)`,
      );
    }
    if (start < cursor) {
      throw new InvalidReplicaPolicyError(`${where}: parts overlap at row ${start}`);
    }
    cursor = stop;
  }
  if (cursor !== end) {
    throw new InvalidReplicaPolicyError(`${where}: rows [${cursor}, ${end}) have no part (gap)`);
  }
  if (minSplitBytes > 0 && sorted.length > 1) {
    for (const part of sorted) {
      const bytes = numelOf(part.box.extent) * elementSize;
      if (bytes < minSplitBytes) {
        throw new InvalidReplicaPolicyError(
          `${where}: part at row ${part.box.origin[0]} is ${bytes} bytes, under minSplitBytes ` +
            `${minSplitBytes}`,
        );
      }
    }
  }
  return sorted;
}

function segmentOf(target: MapFrame, holder: MapFrame, box: Box): TransferSegmentDict {
  return {
    shape: [...box.extent],
    source: [holder.rank, frameAddress(holder, box.origin), [...holder.strides]],
    target: [target.rank, frameAddress(target, box.origin), [...target.strides]],
  };
}

/** Strict total order of segments: target, target offset, source, source offset, shape, strides. */
export function compareSegments(a: TransferSegmentDict, b: TransferSegmentDict): number {
  return a.target[0] - b.target[0] || a.target[1] - b.target[1] ||
    a.source[0] - b.source[0] || a.source[1] - b.source[1] ||
    compareCoords(a.shape, b.shape) || compareCoords(a.source[2], b.source[2]) ||
    compareCoords(a.target[2], b.target[2]);
}

/**
 * Joins segments whose shard address mappings both continue along one axis (DeepSpeed
 * `_merge`: `first.offset + first.shape[axis]·stride[axis] == second.offset` on both sides,
 * other extents equal), in a fixed order, until nothing joins or the pass budget is spent.
 * Address continuation makes every join exact as a copy. Does not claim the fewest segments.
 */
export function coalesceSegments(
  segments: readonly TransferSegmentDict[],
  budget: PlanBudget,
): TransferSegmentDict[] {
  const groups = new Map<string, TransferSegmentDict[]>();
  for (const s of segments) {
    const key = `${s.source[0]}|${s.target[0]}|${s.source[2].join(",")}|${s.target[2].join(",")}|` +
      s.shape.length;
    const g = groups.get(key);
    const copy: TransferSegmentDict = {
      shape: [...s.shape],
      source: [s.source[0], s.source[1], s.source[2]],
      target: [s.target[0], s.target[1], s.target[2]],
    };
    if (g) g.push(copy);
    else groups.set(key, [copy]);
  }
  const out: TransferSegmentDict[] = [];
  let checks = 0;
  for (const group of groups.values()) {
    let live = group.sort(compareSegments);
    for (let pass = 0; pass < budget.maxMergePasses; pass++) {
      // Target offsets are distinct within a group: its segments write disjoint addresses.
      const byTarget = new Map<number, number>();
      live.forEach((s, i) => byTarget.set(s.target[1], i));
      const dead = new Uint8Array(live.length);
      let joined = false;
      for (let i = 0; i < live.length; i++) {
        if (dead[i]) continue;
        const s = live[i];
        const nd = s.shape.length;
        let grew = true;
        while (grew) {
          grew = false;
          for (let axis = 0; axis < nd; axis++) {
            if (++checks > budget.maxMergeChecks) {
              throw new PlanBudgetError(
                `merge checks exceed maxMergeChecks ${budget.maxMergeChecks}`,
              );
            }
            const nextTarget = s.target[1] + s.shape[axis] * s.target[2][axis];
            const j = byTarget.get(nextTarget);
            if (j === undefined || j === i || dead[j]) continue;
            const t = live[j];
            if (t.source[1] !== s.source[1] + s.shape[axis] * s.source[2][axis]) continue;
            let same = true;
            for (let k = 0; k < nd; k++) if (k !== axis && t.shape[k] !== s.shape[k]) same = false;
            if (!same) continue;
            s.shape[axis] += t.shape[axis];
            dead[j] = 1;
            byTarget.delete(nextTarget);
            joined = grew = true;
            break;
          }
        }
      }
      live = live.filter((_, i) => !dead[i]);
      if (!joined) break;
    }
    out.push(...live);
  }
  return out.sort(compareSegments);
}

function planBytesOf(logicalShape: number[], segments: TransferSegmentDict[]): number {
  // Keys sorted as DeepSpeed's `json.dumps(..., sort_keys=True)` would write them.
  const body = segments.map((s) =>
    `{"shape":${JSON.stringify(s.shape)},"source":${JSON.stringify(s.source)},"target":${
      JSON.stringify(s.target)
    }}`
  ).join(",");
  return new TextEncoder().encode(
    `{"logical_shape":${JSON.stringify(logicalShape)},"segments":[${body}]}`,
  ).length;
}

/**
 * Plans every parameter of one sync together (DeepSpeed `plan_transfers`).
 *
 * Each map is validated first ({@link normalizeMap}); then every (target piece, source region)
 * intersection becomes one {@link ReplicaRequest} — single-holder regions included, so a policy
 * sees load it cannot move — in the fixed order (parameter name, target location, origin). The
 * policy is called once with all of them. Every answer is checked before any segment is
 * emitted: one answer per request; a holder location must be an integer naming a validated
 * holder (booleans, floats, null and strings are refused); parts must be objects with a
 * validated `sourceLocation` and integer coordinate fields, have the region's number of axes,
 * be non-empty, cut only axis 0 and tile the region exactly (no gap, overlap or part outside);
 * with `minSplitBytes`, every part of a split is at least that large; and the parts of one
 * parameter (a holder answer counts one) stay within `budget.maxPairChecks`, decided from each
 * answer's length before its parts are read and accumulated across requests. Any refusal raises
 * {@link InvalidReplicaPolicyError}. Segments are then coalesced and sorted.
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
  const all: PendingRequest[] = prepared.flatMap((p) => p.pending);
  const policy = options.policy ?? localFirstLeastLoaded;
  const requests = all.map((p) => p.request);
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
  const resolved: ResolvedPart[][] = new Array(all.length);
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
    resolved[i] = resolveAnswer(
      pending,
      answer,
      i,
      minSplitBytes,
      prepared[pending.param].elementSize,
    );
    if (resolved[i].length > 1) splitRequests++;
  }
  const raw: TransferSegmentDict[][] = prepared.map(() => []);
  all.forEach((pending, i) => {
    for (const part of resolved[i]) {
      const holder = pending.holders.find((h) => h.rank === part.location)!;
      raw[pending.param].push(segmentOf(pending.target, holder, part.box));
    }
  });
  const parameters = new Map<string, ParameterPlan>();
  prepared.forEach((p, i) => {
    const segments = coalesceSegments(raw[i], budget);
    if (segments.length > budget.maxSegments) {
      throw new PlanBudgetError(
        `${p.name}: ${segments.length} segments exceeds maxSegments ${budget.maxSegments}`,
      );
    }
    const planBytes = planBytesOf(p.logicalShape, segments);
    if (planBytes > budget.maxPlanBytes) {
      throw new PlanBudgetError(
        `${p.name}: plan metadata is ${planBytes} bytes, over maxPlanBytes ${budget.maxPlanBytes}`,
      );
    }
    parameters.set(p.name, {
      name: p.name,
      logicalShape: p.logicalShape,
      elementSize: p.elementSize,
      segments,
      movedElements: segments.reduce((s, seg) => s + numelOf(seg.shape), 0),
      statistics: {
        sourcePieces: p.sources.length,
        targetPieces: p.targets.length,
        pairChecks: p.pairChecks,
        requests: p.pending.length,
        segmentsBeforeMerge: raw[i].length,
        segments: segments.length,
        planBytes,
      },
    });
  });
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
