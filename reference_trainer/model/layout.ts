/**
 * The simulated parallel layout: which EP rank each data-parallel rank belongs to, every
 * parameter's affine map over the EP ranks (its model-parallel layout), and the ZeRO flat
 * groups that partition optimizer state (and, at stage 3, parameters) across data-parallel
 * ranks. DeepSpeed keeps ZeRO fragments outside the affine map, and so does this module.
 *
 * @module
 */

import {
  contiguousSplitMap,
  evenSizes,
  holdersByExpert,
  makePlacement,
  numelOf,
  type ParamAffineMap,
  placementToMap,
  replicatedMap,
  uniformPlacement,
  validatePlacement,
} from "../../src/affine/mod.ts";
import type { ModelConfig, Topology } from "./config.ts";
import { UsageError } from "./trainer_errors.ts";
import { type ParamSpec, paramSpecs } from "./model.ts";

/** One parameter's slice of a flat group. */
export interface GroupEntry {
  /** Parameter name. */
  name: string;
  /** Element offset in the flat group. */
  offset: number;
  /** Elements of the parameter's EP-rank shard. */
  numel: number;
}

/** A flattened parameter group and its partition across data-parallel ranks. */
export interface FlatGroup {
  /** `dense` (shared by every rank) or `expert` (one per EP rank). */
  kind: "dense" | "expert";
  /** EP rank whose shards the group flattens (`null` for dense). */
  epRank: number | null;
  /** Parameters in flat order. */
  entries: GroupEntry[];
  /** Total elements before padding. */
  numel: number;
  /** Data-parallel ranks sharing the group, in partition order. */
  ranks: number[];
  /** Elements per partition (the group is zero-padded to `ranks.length * partitionSize`). */
  partitionSize: number;
}

/** Everything derived from a topology. */
export interface Layout {
  /** The topology. */
  topology: Topology;
  /** The model shape. */
  model: ModelConfig;
  /** Parameters in fixed order. */
  specs: ParamSpec[];
  /** Each parameter's affine map over EP ranks. */
  maps: Map<string, ParamAffineMap>;
  /** Dense group, partitioned over all W ranks. */
  dense: FlatGroup;
  /** Expert group of each EP rank, partitioned over that rank's expert-data-parallel group. */
  expert: FlatGroup[];
  /** `holders[e]`: EP ranks holding expert e. */
  holders: number[][];
  /** `slots[p][e]`: local slot of expert e on EP rank p, or -1. */
  slots: Int32Array[];
}

/** EP rank of a data-parallel rank (expert-data-parallel groups are strided by P). */
export function epRankOf(topology: Topology, rank: number): number {
  return rank % topology.epSize;
}

/** Data-parallel ranks whose EP rank is `epRank`, ascending. */
export function edpRanks(topology: Topology, epRank: number): number[] {
  const out: number[] = [];
  for (let r = epRank; r < topology.worldSize; r += topology.epSize) out.push(r);
  return out;
}

/** The affine map over EP ranks of one parameter under a topology. */
function paramMap(spec: ParamSpec, topology: Topology): ParamAffineMap {
  const P = topology.epSize;
  switch (spec.kind) {
    case "dense":
      return replicatedMap(spec.shape, [...Array(P).keys()]);
    case "expert":
      return placementToMap(topology.placement, spec.shape);
    case "column":
      return contiguousSplitMap(spec.shape, evenSizes(spec.shape[1], P), 1);
  }
}

/** Checks a topology against the model; every problem is a usage error (exit 2). */
function validateTopology(topology: Topology, model: ModelConfig): void {
  const { worldSize: W, epSize: P, placement } = topology;
  if (!Number.isInteger(W) || W < 1 || W > 256) {
    throw new UsageError(`--world-size must be an integer in [1, 256], got ${W}`);
  }
  if (!Number.isInteger(P) || P < 1) throw new UsageError(`--ep-size must be a positive integer`);
  if (W % P !== 0) {
    throw new UsageError(`--ep-size ${P} does not divide --world-size ${W}`);
  }
  if (placement.ep_size !== P) {
    throw new UsageError(`placement is for ep_size ${placement.ep_size}, but --ep-size is ${P}`);
  }
  if (placement.num_experts !== model.numExperts) {
    throw new UsageError(
      `placement has ${placement.num_experts} experts, the model has ${model.numExperts}`,
    );
  }
  if (![1, 2, 3].includes(topology.zeroStage)) {
    throw new UsageError(`--zero-stage must be 1, 2 or 3`);
  }
}

function flatGroup(
  kind: "dense" | "expert",
  epRank: number | null,
  specs: ParamSpec[],
  maps: Map<string, ParamAffineMap>,
  ranks: number[],
): FlatGroup {
  const entries: GroupEntry[] = [];
  let offset = 0;
  for (const spec of specs) {
    const shard = maps.get(spec.name)!.ranks.get(epRank ?? 0);
    const numel = shard ? numelOf(shard.shardShape) : 0;
    entries.push({ name: spec.name, offset, numel });
    offset += numel;
  }
  return {
    kind,
    epRank,
    entries,
    numel: offset,
    ranks,
    partitionSize: Math.ceil(offset / ranks.length),
  };
}

/** Builds the layout of a validated topology. */
export function buildLayout(topology: Topology, model: ModelConfig): Layout {
  validateTopology(topology, model);
  const specs = paramSpecs(model);
  const maps = new Map(specs.map((s) => [s.name, paramMap(s, topology)]));
  const all = [...Array(topology.worldSize).keys()];
  const dense = flatGroup("dense", null, specs.filter((s) => s.kind === "dense"), maps, all);
  const expert = [...Array(topology.epSize).keys()].map((p) =>
    flatGroup("expert", p, specs.filter((s) => s.kind !== "dense"), maps, edpRanks(topology, p))
  );
  const holders = holdersByExpert(topology.placement);
  const slots = [...Array(topology.epSize).keys()].map((p) => {
    const s = new Int32Array(model.numExperts).fill(-1);
    const entry = topology.placement.ranks.find((r) => r.rank === p)!;
    entry.experts.forEach((e, i) => (s[e] = i));
    return s;
  });
  return { topology, model, specs, maps, dense, expert, holders, slots };
}

/** Options of {@link topologyFromJson}. */
export interface TopologyJsonOptions {
  /**
   * Ignore keys other than the five topology keys (a harness's target file also carries
   * trainer arguments such as `grad_accum`); by default they are refused.
   */
  ignoreOtherKeys?: boolean;
}

/** The keys {@link topologyFromJson} reads. */
export const TOPOLOGY_JSON_KEYS: readonly string[] = Object.freeze([
  "world_size",
  "ep_size",
  "placement",
  "zero_stage",
  "precision",
]);

/**
 * Parses a topology given as JSON (e.g. a planner's `--target` file):
 * `{"world_size": W, "ep_size": P, "placement": <descriptor or [[experts of EP rank 0], ...]>,
 * "zero_stage": 1|2|3, "precision": "fp32"|"bf16"}`. `placement` defaults to uniform,
 * `ep_size` to the placement's (else 1), `zero_stage` to 2 and `precision` to fp32. Other keys
 * are refused unless `options.ignoreOtherKeys`. Every problem is a usage error naming `where`.
 */
export function topologyFromJson(
  raw: unknown,
  model: ModelConfig,
  where = "topology",
  options: TopologyJsonOptions = {},
): Topology {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new UsageError(`${where}: expected an object`);
  }
  const t = raw as Record<string, unknown>;
  const extra = Object.keys(t).filter((k) => !TOPOLOGY_JSON_KEYS.includes(k));
  if (extra.length > 0 && !options.ignoreOtherKeys) {
    throw new UsageError(`${where}: unknown key ${extra[0]}`);
  }
  const int = (key: string, fallback: number) => {
    const v = t[key] ?? fallback;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1) {
      throw new UsageError(`${where}.${key}: expected a positive integer`);
    }
    return v;
  };
  let placement;
  try {
    placement = t.placement === undefined
      ? null
      : Array.isArray(t.placement)
      ? makePlacement(model.numExperts, t.placement as number[][])
      : validatePlacement(t.placement, `${where}.placement`);
  } catch (e) {
    throw new UsageError(`${where}.placement: ${(e as Error).message}`);
  }
  const epSize = int("ep_size", placement?.ep_size ?? 1);
  const zeroStage = int("zero_stage", 2);
  const precision = t.precision ?? "fp32";
  if (precision !== "fp32" && precision !== "bf16") {
    throw new UsageError(`${where}.precision: expected "fp32" or "bf16"`);
  }
  if (placement === null && model.numExperts % epSize !== 0) {
    throw new UsageError(`${where}: ep_size ${epSize} does not divide ${model.numExperts} experts`);
  }
  const topology: Topology = {
    worldSize: int("world_size", 1),
    epSize,
    placement: placement ?? uniformPlacement(model.numExperts, epSize),
    zeroStage: zeroStage as 1 | 2 | 3,
    precision,
  };
  validateTopology(topology, model);
  return topology;
}
