/**
 * Training state as the simulated ranks hold it: for every parameter, one shard per EP rank
 * (fp32 master, exp_avg, exp_avg_sq and the module copy used by forward/backward), plus the
 * logical common state (steps, scheduler, RNG counter, sampler position). Digests hash the
 * **logical** state, so they compare across topologies and reveal replicas that disagree.
 *
 * @module
 */

import {
  extract,
  type ParamAffineMap,
  rebuild,
  ReplicaConflictError,
} from "../../src/affine/mod.ts";
import { roundToBf16Into } from "./bf16.ts";
import { freshParamGroups, HYPER, type ParamGroup } from "./config.ts";
import { freshSampler, type SamplerState } from "./data.ts";
import { CheckpointError } from "./trainer_errors.ts";
import { Hasher64, hashJson } from "./hash.ts";
import type { FlatGroup, Layout } from "./layout.ts";
import { initParams } from "./model.ts";
import { freshScheduler, type SchedulerState } from "./optimizer.ts";

/** Per-EP-rank shards of one parameter (index = EP rank; empty arrays where a rank holds none). */
export interface ParamState {
  /** fp32 master weights. */
  fp32: Float32Array[];
  /** Adam first moments. */
  expAvg: Float32Array[];
  /** Adam second moments. */
  expAvgSq: Float32Array[];
  /** Module weights (bf16-rounded under `--precision bf16`). */
  module: Float32Array[];
}

/** Logical RNG state: the seed and the counter of the next micro-batch's draws. */
export interface RngState {
  /** Seed. */
  seed: number;
  /** Counter; advances once per micro-batch. */
  offset: number;
}

/** Topology-independent state outside the parameter tensors. */
export interface CommonState {
  /** Optimizer steps completed. */
  globalStep: number;
  /** Micro-batches consumed. */
  microStep: number;
  /** Samples consumed (whatever the micro-batch size: the logical data counter). */
  samples: number;
  /** Optimizer param groups and their hyper-parameters. */
  paramGroups: ParamGroup[];
  /** Adam's step counter (bias correction). */
  optimizerStep: number;
  /** LR scheduler. */
  scheduler: SchedulerState;
  /** RNG counter. */
  rng: RngState;
  /** Sampler position. */
  sampler: SamplerState;
}

/** The whole state of a run. */
export interface TrainState {
  /** Layout of the ranks holding it. */
  layout: Layout;
  /** Parameter shards by name. */
  params: Map<string, ParamState>;
  /** Common state. */
  common: CommonState;
}

/** Shards of one parameter keyed by EP rank, as a checkpoint loader produces them. */
export interface ShardSet {
  /** fp32 master shards. */
  fp32: Map<number, Float32Array>;
  /** exp_avg shards. */
  expAvg: Map<number, Float32Array>;
  /** exp_avg_sq shards. */
  expAvgSq: Map<number, Float32Array>;
  /** Module-weight shards when the source stores them (native); else derived from fp32. */
  module?: Map<number, Float32Array>;
}

/** What every resume loader returns: the target topology's shards plus the common state. */
export interface LoadedCheckpoint {
  /** Loader kind (`native`, `universal`, `plan`, ...). */
  kind: string;
  /** Path it was loaded from. */
  path: string;
  /** Restored common state. */
  common: CommonState;
  /** Shards for the target layout's EP ranks, by parameter name. */
  shards: Map<string, ShardSet>;
}

/** What a resume loader (`resume.ts`) is given. */
export interface ResumeRequest {
  /** Checkpoint folder (already resolved through `latest`/`latest_universal`). */
  path: string;
  /** Target layout: the topology this run trains on. */
  layout: Layout;
  /** `--plan` file, when given. */
  plan: string | null;
}

/** Sets the module copy from the fp32 master (bf16 rounding or a plain copy). */
export function refreshModule(layout: Layout, ps: ParamState): void {
  for (let p = 0; p < ps.fp32.length; p++) {
    if (layout.topology.precision === "bf16") roundToBf16Into(ps.fp32[p], ps.module[p]);
    else ps.module[p].set(ps.fp32[p]);
  }
}

function shardNumel(map: ParamAffineMap, p: number): number {
  const s = map.ranks.get(p);
  return s ? s.shardShape.reduce((a, b) => a * b, 1) : 0;
}

/** A fresh run's state: seeded logical weights extracted onto the layout's shards. */
export function initState(layout: Layout, seed: number, steps: number): TrainState {
  const logical = initParams(seed, layout.model);
  const params = new Map<string, ParamState>();
  for (const spec of layout.specs) {
    const map = layout.maps.get(spec.name)!;
    const P = layout.topology.epSize;
    const ps: ParamState = { fp32: [], expAvg: [], expAvgSq: [], module: [] };
    for (let p = 0; p < P; p++) {
      const n = shardNumel(map, p);
      ps.fp32.push(n > 0 ? extract(map, logical.get(spec.name)!, p) : new Float32Array(0));
      ps.expAvg.push(new Float32Array(n));
      ps.expAvgSq.push(new Float32Array(n));
      ps.module.push(new Float32Array(n));
    }
    refreshModule(layout, ps);
    params.set(spec.name, ps);
  }
  return {
    layout,
    params,
    common: {
      globalStep: 0,
      microStep: 0,
      samples: 0,
      paramGroups: freshParamGroups(HYPER, layout.specs),
      optimizerStep: 0,
      scheduler: freshScheduler(HYPER, steps),
      rng: { seed, offset: 0 },
      sampler: freshSampler(seed, layout.model.datasetSize),
    },
  };
}

/** Builds the running state from a loader's shards, checking every shard against the layout. */
export function stateFromLoaded(layout: Layout, loaded: LoadedCheckpoint): TrainState {
  const params = new Map<string, ParamState>();
  const P = layout.topology.epSize;
  for (const spec of layout.specs) {
    const set = loaded.shards.get(spec.name);
    if (!set) throw new CheckpointError(`${loaded.path}: no state for parameter ${spec.name}`);
    const map = layout.maps.get(spec.name)!;
    const ps: ParamState = { fp32: [], expAvg: [], expAvgSq: [], module: [] };
    const pick = (m: Map<number, Float32Array>, p: number, what: string) => {
      const n = shardNumel(map, p);
      const a = m.get(p) ?? (n === 0 ? new Float32Array(0) : undefined);
      if (!a || a.length !== n) {
        throw new CheckpointError(
          `${loaded.path}: ${spec.name} ${what} shard of EP rank ${p} has ${
            a?.length ?? "no"
          } elements, the target layout needs ${n}`,
        );
      }
      return a;
    };
    for (let p = 0; p < P; p++) {
      ps.fp32.push(pick(set.fp32, p, "fp32"));
      ps.expAvg.push(pick(set.expAvg, p, "exp_avg"));
      ps.expAvgSq.push(pick(set.expAvgSq, p, "exp_avg_sq"));
      ps.module.push(
        set.module ? pick(set.module, p, "module") : new Float32Array(shardNumel(map, p)),
      );
    }
    if (!set.module) refreshModule(layout, ps);
    params.set(spec.name, ps);
  }
  return { layout, params, common: structuredClone(loaded.common) };
}

/**
 * Hashes the logical tensor behind per-EP-rank shards (`full`, null when they disagree).
 * Replicas that agree hash as the logical tensor (so digests compare across topologies);
 * replicas that disagree hash differently.
 */
function hashLogical(
  h: Hasher64,
  map: ParamAffineMap,
  shards: Float32Array[],
  full: Float32Array | null,
): void {
  if (full === null) {
    h.updateString("replicas-diverge");
    for (const s of shards) h.updateArray(s);
    return;
  }
  h.updateString(JSON.stringify(map.logicalShape));
  h.updateArray(full);
}

/** The logical tensor, or null when its replicas disagree (hashed as such, whole). */
function _logicalOrNull(map: ParamAffineMap, shards: Float32Array[]): Float32Array | null {
  const byRank = new Map<number, Float32Array>();
  shards.forEach((s, p) => {
    if (map.ranks.has(p)) byRank.set(p, s);
  });
  try {
    return rebuild(map, byRank);
  } catch (e) {
    if (e instanceof ReplicaConflictError) return null;
    throw e;
  }
}

/** The tensor kinds of a parameter, named as the state components name them. */
const TENSOR_KINDS: readonly [string, (ps: ParamState) => Float32Array[]][] = [
  ["params", (p) => p.fp32],
  ["exp_avg", (p) => p.expAvg],
  ["exp_avg_sq", (p) => p.expAvgSq],
  ["module_params", (p) => p.module],
];

/** What `saved`, `loaded` and `snapshot` events report of the state. */
export interface StateDigests {
  /** One digest per logical state component (`params`, `exp_avg`, ..., `rng`, `sampler`). */
  digests: Record<string, string>;
  /**
   * One digest per parameter and tensor kind, and per expert for expert parameters
   * (`layers.0.experts.w2 · expert 2 · exp_avg`): what a failing state check names.
   */
  tensors: Record<string, string>;
}

/** Digests of the logical, unsharded state; each tensor is rebuilt from its shards once. */
export function digestState(state: TrainState): StateDigests {
  const { layout, params, common } = state;
  const components = TENSOR_KINDS.map(() => new Hasher64());
  const tensors: Record<string, string> = {};
  for (const spec of layout.specs) {
    const map = layout.maps.get(spec.name)!;
    TENSOR_KINDS.forEach(([kind, pick], k) => {
      const shards = pick(params.get(spec.name)!);
      const full = _logicalOrNull(map, shards);
      components[k].updateString(spec.name);
      hashLogical(components[k], map, shards, full);
      if (full === null || spec.kind !== "expert") {
        const h = new Hasher64();
        hashLogical(h, map, shards, full);
        tensors[`${spec.name} · ${kind}`] = h.digest();
        return;
      }
      const per = full.length / spec.shape[0];
      for (let e = 0; e < spec.shape[0]; e++) {
        const h = new Hasher64().updateArray(full.subarray(e * per, (e + 1) * per));
        tensors[`${spec.name} · expert ${e} · ${kind}`] = h.digest();
      }
    });
  }
  const digests: Record<string, string> = {};
  TENSOR_KINDS.forEach(([kind], k) => digests[kind] = components[k].digest());
  Object.assign(digests, {
    optimizer_step: hashJson(common.optimizerStep),
    lr_scheduler: hashJson(common.scheduler),
    rng: hashJson(common.rng),
    sampler: hashJson(common.sampler),
    param_groups: hashJson(paramGroupsJson(common.paramGroups)),
    engine_counters: hashJson(engineCounters(common, layout.model.globalBatch)),
  });
  return { digests, tensors };
}

/** Param groups as checkpoints store them (DeepSpeed's `param_groups` keys). */
export function paramGroupsJson(groups: readonly ParamGroup[]): Record<string, unknown>[] {
  return groups.map((g) => ({
    params: [...g.params],
    lr_scale: g.lrScale,
    betas: [g.beta1, g.beta2],
    eps: g.eps,
    weight_decay: g.weightDecay,
  }));
}

/** Param groups read back from a checkpoint's `param_groups` (a path-precise error otherwise). */
export function paramGroupsFromJson(raw: unknown, where: string): ParamGroup[] {
  if (!Array.isArray(raw) || raw.length === 0) {
    throw new CheckpointError(`${where}: param_groups is missing or empty`);
  }
  return raw.map((g, i) => {
    const num = (x: unknown, key: string) => {
      if (typeof x !== "number" || !Number.isFinite(x)) {
        throw new CheckpointError(`${where}: param_groups[${i}].${key} is not a number`);
      }
      return x;
    };
    if (!Array.isArray(g?.params) || !g.params.every((n: unknown) => typeof n === "string")) {
      throw new CheckpointError(`${where}: param_groups[${i}].params is not a list of names`);
    }
    if (!Array.isArray(g.betas) || g.betas.length !== 2) {
      throw new CheckpointError(`${where}: param_groups[${i}].betas is not a pair`);
    }
    return {
      params: [...g.params],
      lrScale: num(g.lr_scale, "lr_scale"),
      beta1: num(g.betas[0], "betas[0]"),
      beta2: num(g.betas[1], "betas[1]"),
      eps: num(g.eps, "eps"),
      weightDecay: num(g.weight_decay, "weight_decay"),
    };
  });
}

/**
 * The engine's counters in logical units: steps, samples consumed, and samples consumed inside
 * the unfinished accumulation window (0 on a boundary). Counted in samples, not micro-batches,
 * so a resume with another micro-batch size compares like with like. The trainer skips no
 * steps (no loss scaling), so there is no skipped-step counter to hash.
 */
export function engineCounters(
  common: CommonState,
  globalBatch: number,
): { global_steps: number; global_samples: number; window_samples: number } {
  return {
    global_steps: common.globalStep,
    global_samples: common.samples,
    window_samples: common.samples - common.globalStep * globalBatch,
  };
}

/** The component digests alone (see {@link digestState}). */
export function stateDigests(state: TrainState): Record<string, string> {
  return digestState(state).digests;
}

/** Flattens one group's shards (picked per name) into a zero-padded flat buffer. */
export function flattenGroup(group: FlatGroup, pick: (name: string) => Float32Array): Float32Array {
  const flat = new Float32Array(group.partitionSize * group.ranks.length);
  for (const e of group.entries) {
    const src = pick(e.name);
    if (src.length !== e.numel) {
      throw new Error(`flatten: ${e.name} has ${src.length} elements, group expects ${e.numel}`);
    }
    flat.set(src, e.offset);
  }
  return flat;
}

/** Splits a flat group buffer back into per-parameter shards. */
export function unflattenGroup(group: FlatGroup, flat: Float32Array): Map<string, Float32Array> {
  const out = new Map<string, Float32Array>();
  for (const e of group.entries) out.set(e.name, flat.slice(e.offset, e.offset + e.numel));
  return out;
}
