/**
 * The converter (`convert`) and the universal loader. Conversion rebuilds every parameter's
 * full logical tensor from the native shards through its stored affine map (refusing replicas
 * that hold different data) and writes DeepSpeed's universal layout:
 *
 * ```
 * <parent>/latest_universal                  names <output>
 * <output>/zero/<param>/fp32.safetensors     {"param": full fp32 tensor}
 * <output>/zero/<param>/exp_avg.safetensors
 * <output>/zero/<param>/exp_avg_sq.safetensors
 * <output>/zero/<param>/step.safetensors     {"param": I64 scalar}
 * <output>/zero/optimizer_state.json         param_groups, zero stage, Adam step
 * <output>/common_state.json                 step, scheduler, RNG, sampler, source topology, maps
 * <output>/*_model_states.safetensors        copied from the native folder
 * <output>/universal_complete.json           completion marker (written last)
 * ```
 *
 * Loading extracts each target EP rank's shard from the full tensors through the target
 * layout's maps, so any valid topology can resume.
 *
 * @module
 */

import { basename, dirname, join } from "node:path";
import {
  extract,
  InvalidMapError,
  numelOf,
  type ParamAffineMap,
  rebuild,
} from "../../src/affine/mod.ts";
import { checkModel, type NativeMeta, readNative } from "./checkpoint.ts";
import {
  CheckpointError,
  type CommonState,
  type Layout,
  type LoadedCheckpoint,
  MODEL,
  paramGroupsFromJson,
  paramSpecs,
  type ShardSet,
  TrainerError,
} from "../model/mod.ts";
import {
  readVerifiedFolder,
  UNIVERSAL_MARKER,
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

/** Format name of the universal common state. */
export const UNIVERSAL_FORMAT = "parity-reference-universal";

/** The optimizer states written per parameter. */
export const UNIVERSAL_STATES = ["fp32", "exp_avg", "exp_avg_sq"] as const;

/** Options of a conversion. */
export interface ConvertOptions {
  /** Native tag folder. */
  inputFolder: string;
  /** Universal output folder. */
  outputFolder: string;
  /** Fault name (converter-side faults act; others are ignored). */
  fault: string | null;
}

/** True when a map splits its tensor along an axis other than 0 (a column split). */
export function isColumnSplit(map: ParamAffineMap): boolean {
  if (map.ranks.size < 2) return false;
  for (const shard of map.ranks.values()) {
    for (let axis = 1; axis < map.logicalShape.length; axis++) {
      if (shard.shardShape[axis] !== map.logicalShape[axis]) return true;
    }
  }
  return false;
}

/** The `converter-transpose` bug: shards concatenated as if the split were along rows. */
function mergeAsRows(map: ParamAffineMap, shards: Map<number, Float32Array>): Float32Array {
  const full = new Float32Array(numelOf(map.logicalShape));
  let at = 0;
  for (const rank of [...map.ranks.keys()].sort((a, b) => a - b)) {
    const s = shards.get(rank)!;
    full.set(s, at);
    at += s.length;
  }
  return full;
}

/** Converts a native tag folder to the universal layout; returns the output folder. */
export function convertToUniversal(opts: ConvertOptions): string {
  const ck = readNative(opts.inputFolder);
  const { meta } = ck;
  const files = new Map<string, Uint8Array>();
  for (const spec of ck.layout.specs) {
    const map = ck.maps.get(spec.name)!;
    const set = ck.shards.get(spec.name)!;
    const fieldOf: Record<string, Map<number, Float32Array>> = {
      fp32: opts.fault === "master-from-bf16" ? set.module : set.fp32,
      exp_avg: set.expAvg,
      exp_avg_sq: set.expAvgSq,
    };
    const info = {
      is_expert_param: spec.kind === "expert",
      ep_num_experts: spec.kind === "expert" ? MODEL.numExperts : undefined,
    };
    for (const state of UNIVERSAL_STATES) {
      const shards = fieldOf[state];
      let full: Float32Array;
      try {
        full = opts.fault === "converter-transpose" && isColumnSplit(map)
          ? mergeAsRows(map, shards)
          : rebuild(map, shards);
      } catch (e) {
        if (e instanceof InvalidMapError) {
          throw new TrainerError(`${spec.name} ${state}: ${e.message}`);
        }
        throw e;
      }
      if (state === "exp_avg_sq" && opts.fault === "drop-exp-avg-sq") {
        full = new Float32Array(full.length);
      }
      files.set(
        `zero/${spec.name}/${state}.safetensors`,
        encodeSafetensors(new Map([["param", tensor("F32", spec.shape, full)]]), {
          reference_meta: JSON.stringify(info),
        }),
      );
    }
    files.set(
      `zero/${spec.name}/step.safetensors`,
      encodeSafetensors(
        new Map([["param", tensor("I64", [], new BigInt64Array([BigInt(meta.optimizer_step)]))]]),
      ),
    );
  }
  files.set(
    "zero/optimizer_state.json",
    new TextEncoder().encode(
      JSON.stringify(
        {
          zero_stage: meta.topology.zero_stage,
          optimizer_step: meta.optimizer_step,
          param_groups: meta.param_groups,
        },
        null,
        1,
      ) + "\n",
    ),
  );
  const common = {
    format: UNIVERSAL_FORMAT,
    format_version: 1,
    source_tag: meta.tag,
    global_steps: meta.global_steps,
    micro_steps: meta.micro_steps,
    global_samples: meta.global_samples,
    grad_accum: meta.grad_accum,
    optimizer_step: meta.optimizer_step,
    lr_scheduler: meta.lr_scheduler,
    param_groups: meta.param_groups,
    data_sampler: meta.data_sampler,
    rng_state: { seed: ck.common.rng.seed, offset: ck.common.rng.offset },
    model: meta.model,
    seed: meta.seed,
    steps: meta.steps,
    source_topology: meta.topology,
    expert_placement: meta.expert_placement,
    param_shapes: meta.param_shapes,
    universal_checkpoint_info: meta.universal_checkpoint_info,
  };
  files.set("common_state.json", new TextEncoder().encode(JSON.stringify(common, null, 1) + "\n"));
  for (const entry of Deno.readDirSync(opts.inputFolder)) {
    if (entry.isFile && entry.name.endsWith("_model_states.safetensors")) {
      files.set(entry.name, Deno.readFileSync(join(opts.inputFolder, entry.name)));
    }
  }
  const out = writeFolderAtomically(opts.outputFolder, files, {
    name: UNIVERSAL_MARKER,
    format: UNIVERSAL_FORMAT,
    globalStep: meta.global_steps,
  });
  writeTextAtomically(
    join(dirname(opts.outputFolder), "latest_universal"),
    basename(opts.outputFolder),
  );
  return out;
}

/** Common state recorded by the converter. */
interface UniversalCommon {
  format: string;
  global_steps: number;
  micro_steps: number;
  global_samples: number;
  param_groups: unknown;
  optimizer_step: number;
  lr_scheduler: NativeMeta["lr_scheduler"];
  data_sampler: NativeMeta["data_sampler"];
  rng_state: { seed: number; offset: number };
  model: unknown;
}

/** A universal checkpoint read back as full logical tensors. */
export interface UniversalCheckpoint {
  /** Folder. */
  path: string;
  /** Full tensors per parameter and state. */
  tensors: Map<string, Record<(typeof UNIVERSAL_STATES)[number], Float32Array>>;
  /** Common state (Adam step from the `step` files). */
  common: CommonState;
}

/** Reads and validates a universal folder. */
function readUniversal(folder: string): UniversalCheckpoint {
  const { files } = readVerifiedFolder(folder, UNIVERSAL_MARKER);
  const where = join(folder, "common_state.json");
  const raw = files.get("common_state.json");
  if (!raw) throw new CheckpointError(`${where} is missing`);
  let c: UniversalCommon;
  try {
    c = JSON.parse(new TextDecoder().decode(raw));
  } catch {
    throw new CheckpointError(`${where} is not JSON`);
  }
  if (c?.format !== UNIVERSAL_FORMAT) {
    throw new CheckpointError(`${where}: not a universal reference checkpoint`);
  }
  checkModel(c.model, where);
  const read = (rel: string): Tensor => {
    const bytes = files.get(rel);
    if (!bytes) throw new CheckpointError(`checkpoint file ${join(folder, rel)} is missing`);
    try {
      const t = decodeSafetensors(bytes, join(folder, rel)).tensors.get("param");
      if (!t) throw new CheckpointError(`${join(folder, rel)}: no "param" tensor`);
      return t;
    } catch (e) {
      if (e instanceof SafetensorsError) throw new CheckpointError(e.message);
      throw e;
    }
  };
  const tensors = new Map<string, Record<(typeof UNIVERSAL_STATES)[number], Float32Array>>();
  let step: number | null = null;
  for (const spec of paramSpecs(MODEL)) {
    const rec = {} as Record<(typeof UNIVERSAL_STATES)[number], Float32Array>;
    for (const state of UNIVERSAL_STATES) {
      const rel = `zero/${spec.name}/${state}.safetensors`;
      const t = read(rel);
      if (t.dtype !== "F32" || JSON.stringify(t.shape) !== JSON.stringify(spec.shape)) {
        throw new CheckpointError(
          `${join(folder, rel)}: ${t.dtype} ${JSON.stringify(t.shape)}, expected F32 ${
            JSON.stringify(spec.shape)
          }`,
        );
      }
      rec[state] = t.data as Float32Array;
    }
    const st = read(`zero/${spec.name}/step.safetensors`);
    if (st.dtype !== "I64" || st.data.length !== 1) {
      throw new CheckpointError(
        `${join(folder, "zero", spec.name, "step.safetensors")}: not an I64 scalar`,
      );
    }
    const value = Number((st.data as BigInt64Array)[0]);
    if (step !== null && value !== step) {
      throw new CheckpointError(
        `${folder}: parameters disagree on the optimizer step (${step} vs ${value})`,
      );
    }
    step = value;
    tensors.set(spec.name, rec);
  }
  return {
    path: folder,
    tensors,
    common: {
      globalStep: c.global_steps,
      microStep: c.micro_steps,
      samples: c.global_samples,
      paramGroups: paramGroupsFromJson(c.param_groups, where),
      optimizerStep: step ?? c.optimizer_step,
      scheduler: { ...c.lr_scheduler },
      rng: { ...c.rng_state },
      sampler: { ...c.data_sampler },
    },
  };
}

/** Universal resume: each target EP rank's shard is extracted through the target maps. */
export function loadUniversal(folder: string, target: Layout): LoadedCheckpoint {
  const uc = readUniversal(folder);
  const shards = new Map<string, ShardSet>();
  for (const spec of target.specs) {
    const map = target.maps.get(spec.name)!;
    const full = uc.tensors.get(spec.name)!;
    const set: ShardSet = { fp32: new Map(), expAvg: new Map(), expAvgSq: new Map() };
    for (const p of map.ranks.keys()) {
      set.fp32.set(p, extract(map, full.fp32, p));
      set.expAvg.set(p, extract(map, full.exp_avg, p));
      set.expAvgSq.set(p, extract(map, full.exp_avg_sq, p));
    }
    shards.set(spec.name, set);
  }
  return { kind: "universal", path: folder, common: uc.common, shards };
}
