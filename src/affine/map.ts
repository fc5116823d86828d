/**
 * Affine map v1: DeepSpeed's description of how a logical parameter `F` is laid out over rank
 * shards. A piece copies a strided box of `F` (its `source` view) to a strided box of a shard
 * (its `dest` view); `locations` names every rank holding identical data for that box.
 *
 * The JSON form is DeepSpeed's `ParamAffineMap.to_dict()`:
 * `{"logical_shape": [...], "ranks": {"0": {"shard_shape": [...], "pieces": [piece...]}}}` with
 * `piece = {"shape", "source": [offset, strides], "dest": [offset, strides], "locations", "scale"?}`.
 *
 * @module
 */

import { InvalidMapError, ReplicaConflictError } from "./affine_errors.ts";

/** One block of the logical tensor as held in one shard. */
export interface AffinePiece {
  /** Extent of the block, shared by both views. */
  shape: number[];
  /** Element offset of the block in the full logical tensor. */
  sourceOffset: number;
  /** Strides of the block in the full logical tensor. */
  sourceStrides: number[];
  /** Element offset of the block in the shard. */
  destOffset: number;
  /** Strides of the block in the shard. */
  destStrides: number[];
  /** Sorted ranks holding identical data for this block. */
  locations: number[];
  /** The shard holds `full * scale`; 1 for every layout the reference trainer writes. */
  scale: number;
}

/** One rank's shard: its shape and the pieces that fill it. */
export interface RankShard {
  /** Shape of the shard tensor. */
  shardShape: number[];
  /** Pieces placed in this shard. */
  pieces: AffinePiece[];
}

/** The layout of one logical parameter over rank shards. */
export interface ParamAffineMap {
  /** Shape of the full logical tensor. */
  logicalShape: number[];
  /** Shards keyed by rank, ascending. */
  ranks: Map<number, RankShard>;
}

/** JSON form of a piece (DeepSpeed `_piece_to_dict`). */
export interface AffinePieceDict {
  /** Extent of the block. */
  shape: number[];
  /** `[offset, strides]` in the logical tensor. */
  source: [number, number[]];
  /** `[offset, strides]` in the shard. */
  dest: [number, number[]];
  /** Sorted holder ranks. */
  locations: number[];
  /** Present only when not 1. */
  scale?: number;
}

/** JSON form of a map (DeepSpeed `ParamAffineMap.to_dict()`, rank keys as strings). */
export interface ParamAffineMapDict {
  /** Shape of the full logical tensor. */
  logical_shape: number[];
  /** Shards keyed by rank. */
  ranks: Record<string, { shard_shape: number[]; pieces: AffinePieceDict[] }>;
}

/** Typed arrays the map can move: fp32 values, fp64 values or raw bf16 bits. */
export type NumericArray = Float32Array | Float64Array | Uint16Array | Int32Array;

/** Number of elements of a shape (1 for a scalar). */
export function numelOf(shape: readonly number[]): number {
  let n = 1;
  for (let i = 0; i < shape.length; i++) n *= shape[i];
  return n;
}

/** Row-major (C-order) strides of a shape, in elements. */
export function rowMajorStrides(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length);
  let s = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

/** Number of elements in a map's logical tensor. */
export function mapNumel(map: ParamAffineMap): number {
  return numelOf(map.logicalShape);
}

/**
 * Calls `visit(a, b)` for every element of a box of `shape`, with `a` its address under
 * `(offsetA, stridesA)` and `b` under `(offsetB, stridesB)`, in row-major order.
 */
export function forEachAddressPair(
  shape: readonly number[],
  offsetA: number,
  stridesA: readonly number[],
  offsetB: number,
  stridesB: readonly number[],
  visit: (a: number, b: number) => void,
): void {
  const nd = shape.length;
  if (nd === 0) {
    visit(offsetA, offsetB);
    return;
  }
  if (numelOf(shape) === 0) return;
  const last = nd - 1;
  const n = shape[last], sa = stridesA[last], sb = stridesB[last];
  const index = new Array<number>(nd).fill(0);
  for (;;) {
    let a = offsetA, b = offsetB;
    for (let i = 0; i < last; i++) {
      a += index[i] * stridesA[i];
      b += index[i] * stridesB[i];
    }
    for (let k = 0; k < n; k++) visit(a + k * sa, b + k * sb);
    let axis = last - 1;
    while (axis >= 0) {
      index[axis]++;
      if (index[axis] < shape[axis]) break;
      index[axis] = 0;
      axis--;
    }
    if (axis < 0) return;
  }
}

/** Copies a strided box from `from` to `to` (row-major over `shape`). */
export function copyBox(
  shape: readonly number[],
  from: NumericArray,
  fromOffset: number,
  fromStrides: readonly number[],
  to: NumericArray,
  toOffset: number,
  toStrides: readonly number[],
): void {
  forEachAddressPair(shape, fromOffset, fromStrides, toOffset, toStrides, (a, b) => {
    to[b] = from[a];
  });
}

function makeLike<T extends NumericArray>(like: T, length: number): T {
  const ctor = like.constructor as new (n: number) => T;
  return new ctor(length);
}

// ---------------------------------------------------------------------------------------------
// Serialisation

function isIntArray(v: unknown): v is number[] {
  return Array.isArray(v) && v.every((x) => Number.isInteger(x));
}

function expectIntArray(v: unknown, where: string, min = 0): number[] {
  if (!isIntArray(v)) throw new InvalidMapError(`${where}: expected a list of integers`);
  for (const x of v) {
    if (x < min) throw new InvalidMapError(`${where}: ${x} is below ${min}`);
  }
  return v;
}

function expectView(v: unknown, where: string, ndim: number): [number, number[]] {
  if (!Array.isArray(v) || v.length !== 2) {
    throw new InvalidMapError(`${where}: expected [offset, strides]`);
  }
  const [offset, strides] = v;
  if (!Number.isInteger(offset) || offset < 0) {
    throw new InvalidMapError(`${where}[0]: offset must be a non-negative integer`);
  }
  const s = expectIntArray(strides, `${where}[1]`);
  if (s.length !== ndim) {
    throw new InvalidMapError(`${where}[1]: ${s.length} strides for a piece of ${ndim} axes`);
  }
  return [offset as number, s];
}

/** Parses a piece dict, naming `where` in every error. */
export function pieceFromDict(raw: unknown, where: string): AffinePiece {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new InvalidMapError(`${where}: expected an object`);
  }
  const p = raw as Record<string, unknown>;
  const shape = expectIntArray(p.shape, `${where}.shape`);
  const [sourceOffset, sourceStrides] = expectView(p.source, `${where}.source`, shape.length);
  const [destOffset, destStrides] = expectView(p.dest, `${where}.dest`, shape.length);
  const locations = expectIntArray(p.locations, `${where}.locations`);
  if (locations.length === 0) throw new InvalidMapError(`${where}.locations: names no holder`);
  const scale = p.scale === undefined ? 1 : p.scale;
  if (typeof scale !== "number" || !Number.isFinite(scale) || scale === 0) {
    throw new InvalidMapError(`${where}.scale: must be a finite non-zero number`);
  }
  return {
    shape: [...shape],
    sourceOffset,
    sourceStrides: [...sourceStrides],
    destOffset,
    destStrides: [...destStrides],
    locations: [...new Set(locations)].sort((a, b) => a - b),
    scale,
  };
}

/** Serialises a piece in DeepSpeed's dict form (`scale` only when not 1). */
export function pieceToDict(piece: AffinePiece): AffinePieceDict {
  const d: AffinePieceDict = {
    shape: [...piece.shape],
    source: [piece.sourceOffset, [...piece.sourceStrides]],
    dest: [piece.destOffset, [...piece.destStrides]],
    locations: [...piece.locations],
  };
  if (piece.scale !== 1) d.scale = piece.scale;
  return d;
}

/**
 * Parses a map from its JSON form. Structure errors name the exact field
 * (`ranks.1.pieces.0.dest[1]`); geometry is checked by {@link validateMap}.
 */
export function mapFromDict(raw: unknown, where = "map"): ParamAffineMap {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new InvalidMapError(`${where}: expected an object`);
  }
  const m = raw as Record<string, unknown>;
  const logicalShape = expectIntArray(m.logical_shape, `${where}.logical_shape`);
  if (typeof m.ranks !== "object" || m.ranks === null || Array.isArray(m.ranks)) {
    throw new InvalidMapError(`${where}.ranks: expected an object keyed by rank`);
  }
  const entries: [number, RankShard][] = [];
  for (const [key, value] of Object.entries(m.ranks as Record<string, unknown>)) {
    const rank = Number(key);
    if (!Number.isInteger(rank) || rank < 0 || String(rank) !== key.trim()) {
      throw new InvalidMapError(`${where}.ranks: key ${JSON.stringify(key)} is not a rank`);
    }
    const here = `${where}.ranks.${key}`;
    if (typeof value !== "object" || value === null) {
      throw new InvalidMapError(`${here}: expected {shard_shape, pieces}`);
    }
    const r = value as Record<string, unknown>;
    const shardShape = expectIntArray(r.shard_shape, `${here}.shard_shape`);
    if (!Array.isArray(r.pieces)) throw new InvalidMapError(`${here}.pieces: expected a list`);
    const pieces = r.pieces.map((p, i) => pieceFromDict(p, `${here}.pieces.${i}`));
    entries.push([rank, { shardShape: [...shardShape], pieces }]);
  }
  entries.sort((a, b) => a[0] - b[0]);
  return { logicalShape: [...logicalShape], ranks: new Map(entries) };
}

/** Serialises a map in DeepSpeed's dict form, ranks ascending. */
export function mapToDict(map: ParamAffineMap): ParamAffineMapDict {
  const ranks: ParamAffineMapDict["ranks"] = {};
  for (const rank of [...map.ranks.keys()].sort((a, b) => a - b)) {
    const shard = map.ranks.get(rank)!;
    ranks[String(rank)] = {
      shard_shape: [...shard.shardShape],
      pieces: shard.pieces.map(pieceToDict),
    };
  }
  return { logical_shape: [...map.logicalShape], ranks };
}

// ---------------------------------------------------------------------------------------------
// Validation

/** Largest address a strided box touches (offset when any extent is 0: nothing touched). */
function lastAddress(shape: readonly number[], offset: number, strides: readonly number[]): number {
  let a = offset;
  for (let i = 0; i < shape.length; i++) a += (shape[i] - 1) * strides[i];
  return a;
}

/**
 * Cheap structural validation (DeepSpeed's `validate()` plus bounds): every piece has the
 * logical rank, stays inside `F` and inside its shard, and each rank's pieces add up to the
 * shard's element count. Address-level tiling and holder homogeneity are checked by the
 * planner and the plan verifier, which can afford them per piece.
 */
export function validateMap(map: ParamAffineMap, where = "map"): void {
  const nd = map.logicalShape.length;
  const full = numelOf(map.logicalShape);
  for (const [rank, shard] of map.ranks) {
    const here = `${where}.ranks.${rank}`;
    if (shard.shardShape.length === 0 && nd !== 0) {
      // A 0-d shard is only meaningful for a scalar parameter.
      throw new InvalidMapError(`${here}.shard_shape: empty for a ${nd}-d parameter`);
    }
    const shardNumel = numelOf(shard.shardShape);
    let total = 0;
    shard.pieces.forEach((piece, i) => {
      const at = `${here}.pieces.${i}`;
      if (piece.shape.length !== nd) {
        throw new InvalidMapError(`${at}.shape: ${piece.shape.length} axes, parameter has ${nd}`);
      }
      const n = numelOf(piece.shape);
      total += n;
      if (n === 0) return;
      if (lastAddress(piece.shape, piece.sourceOffset, piece.sourceStrides) >= full) {
        throw new InvalidMapError(`${at}.source: addresses past the logical tensor (${full})`);
      }
      if (lastAddress(piece.shape, piece.destOffset, piece.destStrides) >= shardNumel) {
        throw new InvalidMapError(`${at}.dest: addresses past the shard (${shardNumel})`);
      }
      if (!piece.locations.includes(rank)) {
        throw new InvalidMapError(`${at}.locations: ${piece.locations} omit the rank holding it`);
      }
    });
    if (total !== shardNumel) {
      throw new InvalidMapError(
        `${here}: pieces hold ${total} elements, shard_shape ${
          JSON.stringify(shard.shardShape)
        } has ${shardNumel}`,
      );
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Builders

/** Every rank holds the whole tensor (DeepSpeed `replicated_map`). */
export function replicatedMap(shape: readonly number[], ranks: readonly number[]): ParamAffineMap {
  const strides = rowMajorStrides(shape);
  const locations = [...ranks].sort((a, b) => a - b);
  const out = new Map<number, RankShard>();
  for (const rank of locations) {
    out.set(rank, {
      shardShape: [...shape],
      pieces: [{
        shape: [...shape],
        sourceOffset: 0,
        sourceStrides: strides,
        destOffset: 0,
        destStrides: strides,
        locations,
        scale: 1,
      }],
    });
  }
  return { logicalShape: [...shape], ranks: out };
}

/**
 * Contiguous split along `dim` with per-rank sizes (uneven allowed, zero allowed): rank `r`
 * holds `sizes[r]` consecutive slices. A column split (`dim` > 0) reads strided from `F`.
 */
export function contiguousSplitMap(
  shape: readonly number[],
  sizes: readonly number[],
  dim: number,
): ParamAffineMap {
  if (dim < 0 || dim >= shape.length) throw new InvalidMapError(`split axis ${dim} out of range`);
  const sum = sizes.reduce((a, b) => a + b, 0);
  if (sum !== shape[dim]) {
    throw new InvalidMapError(`split sizes ${sizes} sum to ${sum}, axis ${dim} has ${shape[dim]}`);
  }
  const fullStrides = rowMajorStrides(shape);
  const out = new Map<number, RankShard>();
  let start = 0;
  sizes.forEach((size, rank) => {
    const shardShape = [...shape];
    shardShape[dim] = size;
    out.set(rank, {
      shardShape,
      pieces: size === 0 ? [] : [{
        shape: [...shardShape],
        sourceOffset: start * fullStrides[dim],
        sourceStrides: fullStrides,
        destOffset: 0,
        destStrides: rowMajorStrides(shardShape),
        locations: [rank],
        scale: 1,
      }],
    });
    start += size;
  });
  return { logicalShape: [...shape], ranks: out };
}

/** Even split sizes for `n` items over `parts` ranks (earlier ranks get the remainder). */
export function evenSizes(n: number, parts: number): number[] {
  const base = Math.floor(n / parts), extra = n % parts;
  return Array.from({ length: parts }, (_, r) => base + (r < extra ? 1 : 0));
}

// ---------------------------------------------------------------------------------------------
// AutoEP placement

/** AutoEP placement descriptor v1 in EP-local rank coordinates (DeepSpeed PR #8544). */
export interface PlacementDescriptor {
  /** Always 1. */
  version: number;
  /** Number of global experts E. */
  num_experts: number;
  /** Number of EP ranks P. */
  ep_size: number;
  /** One entry per EP rank: global expert ids in local packed order. */
  ranks: { rank: number; experts: number[] }[];
}

/**
 * Validates a placement descriptor with DeepSpeed's rules: version 1, positive sizes, exactly
 * `ep_size` distinct ranks, expert ids in range and unique within a rank, every expert held
 * somewhere. Replication across ranks and empty ranks are allowed.
 */
export function validatePlacement(raw: unknown, where = "placement"): PlacementDescriptor {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new InvalidMapError(`${where}: expected an object`);
  }
  const d = raw as Record<string, unknown>;
  if (d.version !== 1) throw new InvalidMapError(`${where}.version: expected 1`);
  const isPosInt = (v: unknown) => typeof v === "number" && Number.isInteger(v) && v > 0;
  if (!isPosInt(d.num_experts)) {
    throw new InvalidMapError(`${where}.num_experts: expected a positive integer`);
  }
  if (!isPosInt(d.ep_size)) {
    throw new InvalidMapError(`${where}.ep_size: expected a positive integer`);
  }
  const E = d.num_experts as number, P = d.ep_size as number;
  if (!Array.isArray(d.ranks)) throw new InvalidMapError(`${where}.ranks: expected a list`);
  if (d.ranks.length !== P) {
    throw new InvalidMapError(
      `${where}.ranks: expected exactly ${P} entries, got ${d.ranks.length}`,
    );
  }
  const seenRanks = new Set<number>();
  const covered = new Set<number>();
  const ranks = d.ranks.map((entry, i) => {
    const at = `${where}.ranks.${i}`;
    if (typeof entry !== "object" || entry === null) {
      throw new InvalidMapError(`${at}: expected {rank, experts}`);
    }
    const e = entry as Record<string, unknown>;
    const rank = e.rank;
    if (typeof rank !== "number" || !Number.isInteger(rank) || rank < 0 || rank >= P) {
      throw new InvalidMapError(`${at}.rank: expected an integer in [0, ${P})`);
    }
    if (seenRanks.has(rank)) {
      throw new InvalidMapError(`${at}.rank: ${rank} appears more than once`);
    }
    seenRanks.add(rank);
    if (!Array.isArray(e.experts)) throw new InvalidMapError(`${at}.experts: expected a list`);
    const local = new Set<number>();
    for (const x of e.experts) {
      if (typeof x !== "number" || !Number.isInteger(x) || x < 0 || x >= E) {
        throw new InvalidMapError(
          `${at}.experts: ${JSON.stringify(x)} is not an expert id in [0, ${E})`,
        );
      }
      if (local.has(x)) throw new InvalidMapError(`${at}.experts: expert ${x} listed twice`);
      local.add(x);
      covered.add(x);
    }
    return { rank, experts: [...(e.experts as number[])] };
  });
  const missing = [...Array(E).keys()].filter((x) => !covered.has(x));
  if (missing.length > 0) {
    throw new InvalidMapError(
      `${where}: does not cover global expert ids ${JSON.stringify(missing)}`,
    );
  }
  return { version: 1, num_experts: E, ep_size: P, ranks };
}

/** Builds and validates a descriptor from per-rank expert lists. */
export function makePlacement(numExperts: number, expertsByRank: number[][]): PlacementDescriptor {
  return validatePlacement({
    version: 1,
    num_experts: numExperts,
    ep_size: expertsByRank.length,
    ranks: expertsByRank.map((experts, rank) => ({ rank, experts })),
  });
}

/** The legacy uniform layout: contiguous blocks of `E / P` experts (requires divisibility). */
export function uniformPlacement(numExperts: number, epSize: number): PlacementDescriptor {
  if (numExperts % epSize !== 0) {
    throw new InvalidMapError(`${numExperts} experts do not divide evenly over EP size ${epSize}`);
  }
  const per = numExperts / epSize;
  return makePlacement(
    numExperts,
    Array.from({ length: epSize }, (_, r) => Array.from({ length: per }, (_, i) => r * per + i)),
  );
}

/** For each expert, the sorted EP ranks that hold it. */
export function holdersByExpert(d: PlacementDescriptor): number[][] {
  const holders: number[][] = Array.from({ length: d.num_experts }, () => []);
  for (const { rank, experts } of d.ranks) for (const x of experts) holders[x].push(rank);
  for (const h of holders) h.sort((a, b) => a - b);
  return holders;
}

/**
 * Lowers a placement to an affine map over `[E, ...expertShape]`: each rank's shard is its
 * experts packed in local order; runs of consecutive ids held by that rank alone merge into one
 * piece, replicated experts stay separate pieces naming every holder (DeepSpeed
 * `autoep_placement_to_affine_map`). Empty ranks get an empty shard.
 */
export function placementToMap(
  d: PlacementDescriptor,
  logicalShape: readonly number[],
): ParamAffineMap {
  if (logicalShape[0] !== d.num_experts) {
    throw new InvalidMapError(
      `logical shape ${JSON.stringify(logicalShape)} does not start with ${d.num_experts} experts`,
    );
  }
  const strides = rowMajorStrides(logicalShape);
  const expertNumel = numelOf(logicalShape.slice(1));
  const holders = holdersByExpert(d);
  const out = new Map<number, RankShard>();
  for (const { rank, experts } of [...d.ranks].sort((a, b) => a.rank - b.rank)) {
    const shardShape = [experts.length, ...logicalShape.slice(1)];
    const pieces: AffinePiece[] = [];
    let i = 0;
    while (i < experts.length) {
      const first = experts[i];
      const single = holders[first].length === 1;
      let j = i + 1;
      if (single) {
        while (
          j < experts.length && experts[j] === experts[j - 1] + 1 &&
          holders[experts[j]].length === 1
        ) {
          j++;
        }
      }
      pieces.push({
        shape: [j - i, ...logicalShape.slice(1)],
        sourceOffset: first * expertNumel,
        sourceStrides: strides,
        destOffset: i * expertNumel,
        destStrides: strides,
        locations: [...holders[first]],
        scale: 1,
      });
      i = j;
    }
    out.set(rank, { shardShape, pieces });
  }
  return { logicalShape: [...logicalShape], ranks: out };
}

// ---------------------------------------------------------------------------------------------
// rebuild / extract

/**
 * Rebuilds the full logical tensor from rank shards (DeepSpeed `rebuild`). Replicated pieces
 * must hold identical data in every supplied holder, else `ReplicaConflictError` (an
 * `InvalidMapError`: "hold different data"). Shards of ranks with no pieces may be omitted;
 * every other shard is required.
 */
export function rebuild<T extends NumericArray>(map: ParamAffineMap, shards: Map<number, T>): T {
  validateMap(map);
  const first = [...shards.values()][0];
  if (!first) throw new InvalidMapError("rebuild: no shards supplied");
  const full = makeLike(first, mapNumel(map));
  const written = new Uint8Array(full.length);
  for (const [rank, shard] of map.ranks) {
    if (shard.pieces.length === 0) continue;
    const data = shards.get(rank);
    if (!data) throw new InvalidMapError(`rebuild: shard of rank ${rank} is missing`);
    if (data.length !== numelOf(shard.shardShape)) {
      throw new InvalidMapError(
        `rebuild: shard of rank ${rank} has ${data.length} elements, map says ${
          numelOf(shard.shardShape)
        }`,
      );
    }
    for (const piece of shard.pieces) {
      if (piece.scale !== 1) throw new InvalidMapError("rebuild: scaled pieces are not supported");
      forEachAddressPair(
        piece.shape,
        piece.destOffset,
        piece.destStrides,
        piece.sourceOffset,
        piece.sourceStrides,
        (d, s) => {
          const value = data[d];
          if (written[s]) {
            if (!Object.is(full[s], value) && !(full[s] === value)) {
              throw new ReplicaConflictError(
                `rebuild: replicas of element ${s} hold different data (rank ${rank}: ${value}, ` +
                  `earlier holder: ${full[s]})`,
              );
            }
            return;
          }
          full[s] = value;
          written[s] = 1;
        },
      );
    }
  }
  const hole = written.indexOf(0);
  if (hole >= 0) {
    throw new InvalidMapError(`rebuild: element ${hole} of the parameter is uncovered`);
  }
  return full;
}

/** Extracts one rank's shard from the full logical tensor (DeepSpeed `extract`). */
export function extract<T extends NumericArray>(map: ParamAffineMap, full: T, rank: number): T {
  const shard = map.ranks.get(rank);
  if (!shard) throw new InvalidMapError(`extract: map has no rank ${rank}`);
  if (full.length !== mapNumel(map)) {
    throw new InvalidMapError(
      `extract: tensor has ${full.length} elements, map says ${mapNumel(map)}`,
    );
  }
  const out = makeLike(full, numelOf(shard.shardShape));
  for (const piece of shard.pieces) {
    copyBox(
      piece.shape,
      full,
      piece.sourceOffset,
      piece.sourceStrides,
      out,
      piece.destOffset,
      piece.destStrides,
    );
  }
  return out;
}
