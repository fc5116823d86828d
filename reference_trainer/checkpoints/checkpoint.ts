/**
 * Native (DeepSpeed-shaped) checkpoints. `<dir>/global_step<N>/` holds, with safetensors
 * payloads:
 *
 * - ZeRO 1/2: `mp_rank_00_model_states.safetensors` (dense module weights + all metadata) and
 *   `expp_rank_<p>_mp_rank_00_model_states.safetensors` (EP rank p's packed experts and its
 *   column slice of the output head);
 * - ZeRO 3: `zero_pp_rank_<r>_mp_rank_00_model_states.safetensors` (rank r's partition of the
 *   module weights; rank 0's file carries the metadata);
 * - every stage: `zero_pp_rank_<r>_mp_rank_00_optim_states.safetensors` (rank r's partition of
 *   the flat fp32 master, exp_avg and exp_avg_sq groups);
 * - `checkpoint_complete.json`, written last; then `<dir>/latest` names the tag.
 *
 * @module
 */

import { join } from "node:path";
import {
  mapFromDict,
  mapToDict,
  type ParamAffineMap,
  type PlacementDescriptor,
  validatePlacement,
} from "../../src/affine/mod.ts";
import {
  buildLayout,
  canonicalJson,
  CheckpointError,
  type CommonState,
  epRankOf,
  type FlatGroup,
  flattenGroup,
  fromBf16Bits,
  type Layout,
  type LoadedCheckpoint,
  lrAt,
  MODEL,
  type ModelConfig,
  PARAM,
  paramGroupsFromJson,
  paramGroupsJson,
  roundToBf16Into,
  type SamplerState,
  type SchedulerState,
  type ShardSet,
  toBf16Bits,
  type Topology,
  type TrainState,
  unflattenGroup,
  UsageError,
} from "../model/mod.ts";
import {
  NATIVE_MARKER,
  readMarker,
  readVerifiedFile,
  readVerifiedFolder,
  writeFolderAtomically,
  writeTextAtomically,
} from "./files.ts";
import {
  decodeSafetensors,
  encodeSafetensors,
  SafetensorsError,
  type Tensor,
  tensor,
} from "./safetensors.ts";

/** Format name in native metadata. */
export const NATIVE_FORMAT = "parity-reference-native";
/** Metadata key inside safetensors `__metadata__`. */
export const META_KEY = "reference_meta";

/** The JSON metadata of a native checkpoint (in its primary model-states file). */
export interface NativeMeta {
  /** Always {@link NATIVE_FORMAT}. */
  format: string;
  /** Metadata version (1). */
  format_version: number;
  /** Tag folder name. */
  tag: string;
  /** Optimizer steps done. */
  global_steps: number;
  /** Micro-batches consumed (== global_steps * grad_accum on an accumulation boundary). */
  micro_steps: number;
  /** Samples consumed (micro_steps * micro-batch size). */
  global_samples: number;
  /** Micro-batches per optimizer step of the saving run. */
  grad_accum: number;
  /** Adam step counter. */
  optimizer_step: number;
  /** LR scheduler state. */
  lr_scheduler: SchedulerState;
  /** Optimizer param groups (parameter names and hyper-parameters). */
  param_groups: Record<string, unknown>[];
  /** Sampler state. */
  data_sampler: SamplerState;
  /** RNG state of every data-parallel rank (logical, so all equal). */
  rng_states: { rank: number; seed: number; offset: number }[];
  /** Saved topology. */
  topology: {
    world_size: number;
    ep_size: number;
    zero_stage: 1 | 2 | 3;
    precision: "fp32" | "bf16";
    dp_world_size: number;
    mp_world_size: number;
  };
  /** AutoEP placement descriptor. */
  expert_placement: PlacementDescriptor;
  /** Model shape. */
  model: ModelConfig;
  /** Seed of the saving run. */
  seed: number;
  /** Schedule length of the saving run. */
  steps: number;
  /** Per-parameter logical shapes. */
  param_shapes: Record<string, number[]>;
  /** DeepSpeed-style container of the affine maps (keys are anchored, escaped regexes). */
  universal_checkpoint_info: {
    universal_checkpoint_version: number;
    affine_map: { version: number; params: Record<string, unknown> };
  };
  /** ZeRO flat groups: parameter order, sizes and partitioning. */
  zero_groups: {
    dense: GroupMeta;
    expert: GroupMeta[];
  };
}

/** Stored description of a flat group. */
export interface GroupMeta {
  /** EP rank of an expert group (null for dense). */
  ep_rank: number | null;
  /** Parameters with their offsets and sizes in the flat buffer. */
  params: { name: string; offset: number; numel: number }[];
  /** Unpadded size. */
  numel: number;
  /** Elements per partition. */
  partition_size: number;
  /** Data-parallel ranks in partition order. */
  ranks: number[];
}

/**
 * Name of the native tag folder of a step. The harness spells it in `types/checkpoint_folder.ts`;
 * the trainer keeps its own because it may import only `affine` (the process contract).
 */
export function tagOf(step: number): string {
  return `global_step${step}`;
}

/** Optimizer-state file of a data-parallel rank. */
function optimFileName(rank: number): string {
  return `zero_pp_rank_${rank}_mp_rank_00_optim_states.safetensors`;
}

/** ZeRO-3 model-states file of a data-parallel rank. */
function zero3ModelFileName(rank: number): string {
  return `zero_pp_rank_${rank}_mp_rank_00_model_states.safetensors`;
}

/** Per-EP-rank module file (ZeRO 1/2). */
function expertFileName(epRank: number): string {
  return `expp_rank_${epRank}_mp_rank_00_model_states.safetensors`;
}

/** Dense module file and metadata carrier (ZeRO 1/2). */
export const MODEL_FILE = "mp_rank_00_model_states.safetensors";

/** The regex key DeepSpeed uses for a parameter in `affine_map.params`. */
function affineKey(name: string): string {
  return `^${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`;
}

function groupMeta(g: FlatGroup): GroupMeta {
  return {
    ep_rank: g.epRank,
    params: g.entries.map((e) => ({ ...e })),
    numel: g.numel,
    partition_size: g.partitionSize,
    ranks: [...g.ranks],
  };
}

function moduleTensor(precision: "fp32" | "bf16", shape: number[], values: Float32Array): Tensor {
  return precision === "bf16"
    ? tensor("BF16", shape, toBf16Bits(values))
    : tensor("F32", shape, values.slice());
}

/** Builds the metadata of a state about to be saved. */
function nativeMeta(
  state: TrainState,
  opts: { gradAccum: number; seed: number; steps: number },
): NativeMeta {
  const { layout, common } = state;
  const t = layout.topology;
  const params: Record<string, unknown> = {};
  for (const spec of layout.specs) {
    params[affineKey(spec.name)] = mapToDict(layout.maps.get(spec.name)!);
  }
  return {
    format: NATIVE_FORMAT,
    format_version: 1,
    tag: tagOf(common.globalStep),
    global_steps: common.globalStep,
    micro_steps: common.microStep,
    global_samples: common.samples,
    grad_accum: opts.gradAccum,
    optimizer_step: common.optimizerStep,
    lr_scheduler: { ...common.scheduler },
    param_groups: paramGroupsJson(common.paramGroups),
    data_sampler: { ...common.sampler },
    rng_states: [...Array(t.worldSize).keys()].map((rank) => ({ rank, ...common.rng })),
    topology: {
      world_size: t.worldSize,
      ep_size: t.epSize,
      zero_stage: t.zeroStage,
      precision: t.precision,
      dp_world_size: t.worldSize,
      mp_world_size: 1,
    },
    expert_placement: structuredClone(t.placement),
    model: { ...layout.model },
    seed: opts.seed,
    steps: opts.steps,
    param_shapes: Object.fromEntries(layout.specs.map((s) => [s.name, [...s.shape]])),
    universal_checkpoint_info: {
      universal_checkpoint_version: 0.4,
      affine_map: { version: 1, params },
    },
    zero_groups: { dense: groupMeta(layout.dense), expert: layout.expert.map(groupMeta) },
  };
}

/** Options of a native save. */
export interface SaveOptions {
  /** Root checkpoint folder. */
  checkpointDir: string;
  /** Micro-batches per step of the saving run. */
  gradAccum: number;
  /** Seed of the saving run. */
  seed: number;
  /** Schedule length of the saving run. */
  steps: number;
  /** `replica-drift`: perturb one replica of a replicated expert in the files. */
  perturbReplica?: boolean;
  /** Receives warnings (one line each). */
  warn?: (line: string) => void;
  /** Test hook: write half the files non-atomically, then exit (see `files.ts`). */
  crashHalfway?: boolean;
}

/** Copies of the fp32 and module shards with one replica of a replicated expert perturbed. */
function driftedShards(
  state: TrainState,
  warn: (line: string) => void,
): Map<string, { fp32: Float32Array[]; module: Float32Array[] }> {
  const { layout } = state;
  const out = new Map<string, { fp32: Float32Array[]; module: Float32Array[] }>();
  const expert = layout.holders.findIndex((h) => h.length > 1);
  if (expert < 0) {
    warn("replica-drift: the placement replicates no expert; nothing was perturbed");
    return out;
  }
  const holder = layout.holders[expert].at(-1)!;
  const ps = state.params.get(PARAM.w1)!;
  const fp32 = ps.fp32.map((a) => a.slice());
  const module = ps.module.map((a) => a.slice());
  const at = layout.slots[holder][expert] * layout.model.dModel * layout.model.dFF;
  fp32[holder][at] = fp32[holder][at] + 0.0625;
  if (layout.topology.precision === "bf16") roundToBf16Into(fp32[holder], module[holder]);
  else module[holder].set(fp32[holder]);
  out.set(PARAM.w1, { fp32, module });
  return out;
}

/**
 * Writes the native checkpoint of `state` (tag `global_step<globalStep>`) atomically and
 * updates `latest`. Returns the tag folder.
 */
export function saveNative(state: TrainState, opts: SaveOptions): string {
  const { layout, params } = state;
  const t = layout.topology;
  const meta = nativeMeta(state, opts);
  const drift = opts.perturbReplica ? driftedShards(state, opts.warn ?? (() => {})) : new Map();
  const fp32Of = (name: string) => drift.get(name)?.fp32 ?? params.get(name)!.fp32;
  const moduleOf = (name: string) => drift.get(name)?.module ?? params.get(name)!.module;
  const files = new Map<string, Uint8Array>();
  const metaJson = canonicalJson(meta);

  // Flat groups of each state component, built once.
  const flat = (g: FlatGroup, pick: (name: string) => Float32Array[]) =>
    flattenGroup(g, (name) => pick(name)[g.epRank ?? 0]);
  const groups = [layout.dense, ...layout.expert];
  const flats = new Map<FlatGroup, Record<string, Float32Array>>();
  for (const g of groups) {
    flats.set(g, {
      fp32: flat(g, fp32Of),
      exp_avg: flat(g, (n) => params.get(n)!.expAvg),
      exp_avg_sq: flat(g, (n) => params.get(n)!.expAvgSq),
      module: flat(g, moduleOf),
    });
  }
  const partition = (g: FlatGroup, rank: number, key: string) => {
    const i = g.ranks.indexOf(rank);
    return flats.get(g)![key].slice(i * g.partitionSize, (i + 1) * g.partitionSize);
  };

  for (let r = 0; r < t.worldSize; r++) {
    const p = epRankOf(t, r);
    const tensors = new Map<string, Tensor>();
    const slices: Record<string, unknown> = {};
    for (const [kind, g] of [["dense", layout.dense], ["expert", layout.expert[p]]] as const) {
      for (const key of ["fp32", "exp_avg", "exp_avg_sq"]) {
        const part = partition(g, r, key);
        tensors.set(`${kind}.${key}`, tensor("F32", [part.length], part));
      }
      const i = g.ranks.indexOf(r), lo = i * g.partitionSize, hi = lo + g.partitionSize;
      slices[kind] = g.entries
        .filter((e) => e.offset < hi && e.offset + e.numel > lo && e.numel > 0)
        .map((e) => {
          const start = Math.max(lo, e.offset), end = Math.min(hi, e.offset + e.numel);
          return {
            name: e.name,
            start: start - lo,
            numel: end - start,
            param_offset: start - e.offset,
          };
        });
    }
    const optimMeta = {
      zero_stage: t.zeroStage,
      rank: r,
      ep_rank: p,
      optimizer_step: state.common.optimizerStep,
      partition_count: { dense: layout.dense.ranks.length, expert: layout.expert[p].ranks.length },
      param_slice_mappings: slices,
      param_groups: paramGroupsJson(state.common.paramGroups).map((g) => ({
        ...g,
        lr: state.common.scheduler.lastStep > 0
          ? lrAt(state.common.scheduler, state.common.scheduler.lastStep) * (g.lr_scale as number)
          : 0,
      })),
    };
    files.set(
      optimFileName(r),
      encodeSafetensors(tensors, { [META_KEY]: canonicalJson(optimMeta) }),
    );

    if (t.zeroStage === 3) {
      const mt = new Map<string, Tensor>();
      for (const [kind, g] of [["dense", layout.dense], ["expert", layout.expert[p]]] as const) {
        const part = partition(g, r, "module");
        mt.set(`${kind}.module`, moduleTensor(t.precision, [part.length], part));
      }
      const m = r === 0 ? metaJson : canonicalJson({ rank: r, ep_rank: p, tag: meta.tag });
      files.set(zero3ModelFileName(r), encodeSafetensors(mt, { [META_KEY]: m }));
    }
  }
  if (t.zeroStage !== 3) {
    const dense = new Map<string, Tensor>();
    for (const spec of layout.specs.filter((s) => s.kind === "dense")) {
      dense.set(
        `module.${spec.name}`,
        moduleTensor(t.precision, spec.shape, moduleOf(spec.name)[0]),
      );
    }
    files.set(MODEL_FILE, encodeSafetensors(dense, { [META_KEY]: metaJson }));
    for (let p = 0; p < t.epSize; p++) {
      const et = new Map<string, Tensor>();
      for (const spec of layout.specs.filter((s) => s.kind !== "dense")) {
        const shard = layout.maps.get(spec.name)!.ranks.get(p)!;
        et.set(
          `module.${spec.name}`,
          moduleTensor(t.precision, shard.shardShape, moduleOf(spec.name)[p]),
        );
      }
      const em = { ep_rank: p, experts: t.placement.ranks.find((x) => x.rank === p)!.experts };
      files.set(expertFileName(p), encodeSafetensors(et, { [META_KEY]: canonicalJson(em) }));
    }
  }
  const target = join(opts.checkpointDir, meta.tag);
  writeFolderAtomically(target, files, {
    name: NATIVE_MARKER,
    format: NATIVE_FORMAT,
    globalStep: meta.global_steps,
  }, opts.crashHalfway);
  writeTextAtomically(join(opts.checkpointDir, "latest"), meta.tag);
  return target;
}

// ---------------------------------------------------------------------------------------------
// Reading

/** A native checkpoint read back into per-EP-rank shards of its own (source) layout. */
export interface NativeCheckpoint {
  /** Tag folder. */
  path: string;
  /** Metadata. */
  meta: NativeMeta;
  /** Source layout rebuilt from the metadata. */
  layout: Layout;
  /** Affine maps as stored (checked against the placement). */
  maps: Map<string, ParamAffineMap>;
  /** Shards by parameter, keyed by source EP rank; `module` holds the saved module weights. */
  shards: Map<string, ShardSet & { module: Map<number, Float32Array> }>;
  /** Common state. */
  common: CommonState;
}

function decode(files: Map<string, Uint8Array>, folder: string, name: string) {
  const bytes = files.get(name);
  if (!bytes) throw new CheckpointError(`checkpoint file ${join(folder, name)} is missing`);
  try {
    return decodeSafetensors(bytes, join(folder, name));
  } catch (e) {
    if (e instanceof SafetensorsError) throw new CheckpointError(e.message);
    throw e;
  }
}

function metaOf(file: { metadata: Record<string, string> }, where: string): unknown {
  const raw = file.metadata[META_KEY];
  if (raw === undefined) throw new CheckpointError(`${where}: no ${META_KEY} metadata`);
  try {
    return JSON.parse(raw);
  } catch {
    throw new CheckpointError(`${where}: ${META_KEY} metadata is not JSON`);
  }
}

function f32Of(t: Tensor | undefined, where: string, n: number): Float32Array {
  if (!t) throw new CheckpointError(`${where}: tensor missing`);
  let data: Float32Array;
  if (t.dtype === "F32") data = t.data as Float32Array;
  else if (t.dtype === "BF16") data = fromBf16Bits(t.data as Uint16Array);
  else throw new CheckpointError(`${where}: unexpected dtype ${t.dtype}`);
  if (data.length !== n) {
    throw new CheckpointError(`${where}: ${data.length} elements, expected ${n}`);
  }
  return data;
}

/** Source topology described by native metadata (placement validated). */
function topologyOfMeta(meta: NativeMeta, where: string): Topology {
  try {
    return {
      worldSize: meta.topology.world_size,
      epSize: meta.topology.ep_size,
      zeroStage: meta.topology.zero_stage,
      precision: meta.topology.precision,
      placement: validatePlacement(meta.expert_placement, `${where} expert_placement`),
    };
  } catch (e) {
    throw new CheckpointError(`${where}: invalid topology metadata: ${(e as Error).message}`);
  }
}

/** Checks that a checkpoint was written for this model. */
export function checkModel(model: unknown, where: string): void {
  if (canonicalJson(model) !== canonicalJson(MODEL)) {
    throw new CheckpointError(
      `${where}: written for another model shape (${canonicalJson(model)})`,
    );
  }
}

/** Parses the stored affine maps of every parameter, matching names against the regex keys. */
function storedMaps(
  meta: NativeMeta,
  names: string[],
  where: string,
): Map<string, ParamAffineMap> {
  const info = meta.universal_checkpoint_info?.affine_map;
  if (!info || typeof info.params !== "object") {
    throw new CheckpointError(`${where}: no universal_checkpoint_info.affine_map`);
  }
  if (info.version !== 1) {
    throw new CheckpointError(`${where}: affine_map version ${info.version} is not supported`);
  }
  const out = new Map<string, ParamAffineMap>();
  for (const name of names) {
    const keys = Object.keys(info.params).filter((k) => new RegExp(k).test(name));
    if (keys.length !== 1) {
      throw new CheckpointError(`${where}: ${keys.length} affine_map entries match ${name}`);
    }
    try {
      out.set(name, mapFromDict(info.params[keys[0]], `affine_map.params.${keys[0]}`));
    } catch (e) {
      throw new CheckpointError(`${where}: ${(e as Error).message}`);
    }
  }
  return out;
}

/** Common state recorded in native metadata (per-rank RNG states must agree). */
function commonOfMeta(meta: NativeMeta, where: string): CommonState {
  const rngs = meta.rng_states ?? [];
  if (rngs.length !== meta.topology.world_size) {
    throw new CheckpointError(
      `${where}: ${rngs.length} rng_states for ${meta.topology.world_size} ranks`,
    );
  }
  const first = rngs[0];
  for (const s of rngs) {
    if (s.seed !== first.seed || s.offset !== first.offset) {
      throw new CheckpointError(
        `${where}: RNG state of rank ${s.rank} differs from rank ${first.rank}`,
      );
    }
  }
  return {
    globalStep: meta.global_steps,
    microStep: meta.micro_steps,
    samples: meta.global_samples,
    paramGroups: paramGroupsFromJson(meta.param_groups, where),
    optimizerStep: meta.optimizer_step,
    scheduler: { ...meta.lr_scheduler },
    rng: { seed: first.seed, offset: first.offset },
    sampler: { ...meta.data_sampler },
  };
}

/** What a native checkpoint's metadata alone says: its layout, stored maps and common state. */
export interface NativeMetadata {
  /** Tag folder. */
  path: string;
  /** Metadata. */
  meta: NativeMeta;
  /** Source layout rebuilt from the metadata. */
  layout: Layout;
  /** Affine maps as stored (checked against the placement). */
  maps: Map<string, ParamAffineMap>;
  /** Common state. */
  common: CommonState;
}

function primaryFileName(has: (name: string) => boolean): string {
  return has(MODEL_FILE) ? MODEL_FILE : zero3ModelFileName(0);
}

/** Checks decoded metadata and rebuilds the saved layout and maps from it. */
function metadataOf(meta: NativeMeta, folder: string, where: string): NativeMetadata {
  if (meta?.format !== NATIVE_FORMAT) {
    throw new CheckpointError(`${where}: not a reference-trainer checkpoint`);
  }
  checkModel(meta.model, where);
  const topology = topologyOfMeta(meta, where);
  let layout: Layout;
  try {
    layout = buildLayout(topology, MODEL);
  } catch (e) {
    if (e instanceof UsageError) throw new CheckpointError(`${where}: ${e.message}`);
    throw e;
  }
  const maps = storedMaps(meta, layout.specs.map((s) => s.name), where);
  for (const spec of layout.specs) {
    if (
      canonicalJson(mapToDict(maps.get(spec.name)!)) !==
        canonicalJson(mapToDict(layout.maps.get(spec.name)!))
    ) {
      throw new CheckpointError(
        `${where}: affine map of ${spec.name} disagrees with the topology and placement`,
      );
    }
  }
  const stored = canonicalJson(meta.zero_groups);
  const expected = canonicalJson({
    dense: groupMeta(layout.dense),
    expert: layout.expert.map(groupMeta),
  });
  if (stored !== expected) {
    throw new CheckpointError(`${where}: zero_groups disagree with the topology`);
  }
  return { path: folder, meta, layout, maps, common: commonOfMeta(meta, where) };
}

/**
 * Reads only what a planner needs from a native tag folder: the completion marker and the one
 * model-states file carrying the metadata (size and hash checked against the marker). The
 * optimizer partitions are not read.
 */
export function readNativeMetadata(folder: string): NativeMetadata {
  const marker = readMarker(folder, NATIVE_MARKER);
  const primary = primaryFileName((name) => Object.hasOwn(marker.files, name));
  const bytes = readVerifiedFile(folder, primary, marker, NATIVE_MARKER);
  const where = join(folder, primary);
  const meta = metaOf(decode(new Map([[primary, bytes]]), folder, primary), where) as NativeMeta;
  return metadataOf(meta, folder, where);
}

/**
 * Reads a native tag folder (completion marker and file hashes verified) into per-EP-rank
 * shards of its saved layout: ZeRO partitions are concatenated per flat group and unflattened.
 * Plan executors start from here.
 */
export function readNative(folder: string): NativeCheckpoint {
  const { files } = readVerifiedFolder(folder, NATIVE_MARKER);
  const primary = primaryFileName((name) => files.has(name));
  const primaryFile = decode(files, folder, primary);
  const where = join(folder, primary);
  const meta = metaOf(primaryFile, where) as NativeMeta;
  const { layout, maps, common } = metadataOf(meta, folder, where);
  const topology = layout.topology;

  const W = topology.worldSize;
  const optim = [...Array(W).keys()].map((r) => decode(files, folder, optimFileName(r)));
  const zero3 = topology.zeroStage === 3
    ? [...Array(W).keys()].map((r) => decode(files, folder, zero3ModelFileName(r)))
    : [];
  const gather = (g: FlatGroup, kind: string, key: string, from: typeof optim) => {
    const flat = new Float32Array(g.partitionSize * g.ranks.length);
    g.ranks.forEach((r, i) => {
      const name = `${kind}.${key}`;
      const file = topology.zeroStage === 3 && key === "module"
        ? zero3ModelFileName(r)
        : optimFileName(r);
      flat.set(
        f32Of(from[r].tensors.get(name), `${join(folder, file)} ${name}`, g.partitionSize),
        i * g.partitionSize,
      );
    });
    return unflattenGroup(g, flat);
  };
  const shards = new Map<string, ShardSet & { module: Map<number, Float32Array> }>();
  for (const spec of layout.specs) {
    shards.set(spec.name, {
      fp32: new Map(),
      expAvg: new Map(),
      expAvgSq: new Map(),
      module: new Map(),
    });
  }
  const put = (parts: Map<string, Float32Array>, field: keyof ShardSet, epRanks: number[]) => {
    for (const [name, a] of parts) {
      for (const p of epRanks) shards.get(name)![field]!.set(p, epRanks.length > 1 ? a.slice() : a);
    }
  };
  const allEp = [...Array(topology.epSize).keys()];
  const groups: [FlatGroup, number[]][] = [
    [layout.dense, allEp],
    ...layout.expert.map((g, p): [FlatGroup, number[]] => [g, [p]]),
  ];
  for (const [g, epRanks] of groups) {
    put(gather(g, g.kind, "fp32", optim), "fp32", epRanks);
    put(gather(g, g.kind, "exp_avg", optim), "expAvg", epRanks);
    put(gather(g, g.kind, "exp_avg_sq", optim), "expAvgSq", epRanks);
    if (topology.zeroStage === 3) put(gather(g, g.kind, "module", zero3), "module", epRanks);
  }
  if (topology.zeroStage !== 3) {
    for (const spec of layout.specs.filter((s) => s.kind === "dense")) {
      const n = spec.shape.reduce((a, b) => a * b, 1);
      const a = f32Of(
        primaryFile.tensors.get(`module.${spec.name}`),
        `${where} module.${spec.name}`,
        n,
      );
      for (const p of allEp) shards.get(spec.name)!.module.set(p, a.slice());
    }
    for (let p = 0; p < topology.epSize; p++) {
      const file = decode(files, folder, expertFileName(p));
      for (const spec of layout.specs.filter((s) => s.kind !== "dense")) {
        const shard = layout.maps.get(spec.name)!.ranks.get(p)!;
        const n = shard.shardShape.reduce((a, b) => a * b, 1);
        const key = `module.${spec.name}`;
        shards.get(spec.name)!.module.set(
          p,
          f32Of(file.tensors.get(key), `${join(folder, expertFileName(p))} ${key}`, n),
        );
      }
    }
  }
  return { path: folder, meta, layout, maps, shards, common };
}

/** Describes a topology for error messages. */
export function describeTopology(t: Topology): string {
  return `world_size ${t.worldSize}, ep_size ${t.epSize}, zero_stage ${t.zeroStage}, ${t.precision}, placement ${
    JSON.stringify(t.placement.ranks.map((r) => r.experts))
  }`;
}

/** Native resume: the checkpoint must have been saved on exactly the target topology. */
export function loadNative(folder: string, target: Layout): LoadedCheckpoint {
  const ck = readNative(folder);
  const a = ck.layout.topology, b = target.topology;
  const same = a.worldSize === b.worldSize && a.epSize === b.epSize &&
    a.zeroStage === b.zeroStage &&
    a.precision === b.precision && canonicalJson(a.placement) === canonicalJson(b.placement);
  if (!same) {
    throw new CheckpointError(
      `native resume needs the saved topology: ${folder} has ${describeTopology(a)}; this run has ${
        describeTopology(b)
      } (convert it and use --resume-kind universal)`,
    );
  }
  return { kind: "native", path: folder, common: ck.common, shards: ck.shards };
}
