/**
 * The `plan` command: composes a native checkpoint's saved affine maps with a target topology's
 * maps into one transfer plan for every parameter (`planTransfers` from `src/affine/`, one batch,
 * a named replica policy), writes it as a plan file and verifies the file before it appears.
 *
 * Locations are EP ranks. Data-parallel rank r belongs to EP rank `r % P`, so EP rank p's
 * shards live first on process p; source EP rank p maps to process p and target EP rank q to
 * process q, and a copy from source EP rank p to target EP rank p counts as local. The plan is
 * made for the fp32 master (element size 4); `exp_avg` and `exp_avg_sq` have the same layout
 * and reuse the same segments. ZeRO flat partitions stay outside the plan.
 *
 * @module
 */

import { basename, dirname, join } from "node:path";
import {
  AffineError,
  buildPlanFile,
  getReplicaPolicy,
  type MapPair,
  type PlanFile,
  planTransfers,
  type PlanVerdict,
  readPlanFile,
  REPLICA_POLICY_NAMES,
  verifyPlan,
  writePlanFile,
} from "../src/affine/mod.ts";
import type { FlagSpec } from "./args.ts";
import { readNativeMetadata } from "./checkpoints/mod.ts";
import {
  buildLayout,
  MODEL,
  type Topology,
  topologyFromJson,
  TrainerError,
  UsageError,
} from "./model/mod.ts";
import { FAULT_NAMES, isFault } from "./faults.ts";

/** Bytes per element of the planned state: the fp32 master (Adam moments reuse the segments). */
export const PLAN_ELEMENT_SIZE = 4;

/** Flags of `plan`. */
export const PLAN_FLAGS: readonly FlagSpec[] = [
  { name: "source-checkpoint", help: "native tag folder (<dir>/global_step<N>) to plan from" },
  {
    name: "target",
    help: "target topology JSON: world_size, ep_size, placement, zero_stage, precision " +
      "(other keys ignored)",
  },
  { name: "policy", help: `replica policy: ${REPLICA_POLICY_NAMES.join(", ")}` },
  { name: "out", help: "plan file to write (verified before it appears)" },
  { name: "element-size", help: `bytes per element for the traffic figures, default 4 (fp32)` },
  { name: "fault", help: "accepted so every process can get the run's fault; none acts here" },
];

/** Inputs of {@link planFromCheckpoint}. */
export interface CheckpointPlanOptions {
  /** Native tag folder whose saved maps are the source layout. */
  sourceCheckpoint: string;
  /** Target topology. */
  target: Topology;
  /** Replica policy name (see `REPLICA_POLICY_NAMES`). */
  policy: string;
  /** Bytes per element (default {@link PLAN_ELEMENT_SIZE}). */
  elementSize?: number;
}

/** Location → process mapping of EP ranks `0..epSize-1` (EP rank p sits first on process p). */
export function epRankProcesses(epSize: number): Map<number, number> {
  return new Map([...Array(epSize).keys()].map((p) => [p, p]));
}

/** Looks a replica policy up by name; an unknown name is a usage error listing the known ones. */
function replicaPolicyByName(name: string): ReturnType<typeof getReplicaPolicy> {
  try {
    return getReplicaPolicy(name);
  } catch (e) {
    if (e instanceof AffineError) {
      throw new UsageError(
        `--policy ${JSON.stringify(name)} is unknown (known: ${REPLICA_POLICY_NAMES.join(", ")})`,
      );
    }
    throw e;
  }
}

/**
 * Plans every parameter of a native checkpoint onto a target topology in one `planTransfers`
 * call: source maps as the checkpoint stores them, target maps from `buildLayout(target)`.
 * Only the checkpoint's metadata is read.
 *
 * @throws {UsageError} unknown policy or invalid target topology.
 * @throws {CheckpointError} missing, incomplete or corrupt checkpoint metadata.
 * @throws {TrainerError} the planner refuses the pair of layouts.
 */
function planFromCheckpoint(opts: CheckpointPlanOptions): PlanFile {
  const policy = replicaPolicyByName(opts.policy);
  const targetLayout = buildLayout(opts.target, MODEL);
  const source = readNativeMetadata(opts.sourceCheckpoint);
  const pairs = new Map<string, MapPair>();
  for (const spec of targetLayout.specs) {
    pairs.set(spec.name, {
      source: source.maps.get(spec.name)!,
      target: targetLayout.maps.get(spec.name)!,
    });
  }
  const sourceProcesses = epRankProcesses(source.layout.topology.epSize);
  const targetProcesses = epRankProcesses(opts.target.epSize);
  try {
    const plans = planTransfers(pairs, {
      policy,
      elementSize: opts.elementSize ?? PLAN_ELEMENT_SIZE,
      sourceProcesses,
      targetProcesses,
    });
    return buildPlanFile(plans, {
      policy: opts.policy,
      pairs,
      sourceProcesses,
      targetProcesses,
    });
  } catch (e) {
    if (e instanceof AffineError) {
      throw new TrainerError(`planner refused ${opts.sourceCheckpoint}: ${e.message}`);
    }
    throw e;
  }
}

/**
 * Writes a plan file under a temporary name, reads it back, verifies it with `verifyPlan` and
 * only then renames it into place, so a planner bug never leaves a plan file behind.
 *
 * @throws {TrainerError} naming the verifier's first problem (nothing is left at `path`).
 */
export async function writeVerifiedPlan(path: string, plan: PlanFile): Promise<PlanVerdict> {
  await Deno.mkdir(dirname(path) || ".", { recursive: true });
  const temp = join(dirname(path), `.${basename(path)}.tmp-${Deno.pid}`);
  try {
    await writePlanFile(temp, plan);
    const verdict = verifyPlan(await readPlanFile(temp));
    if (!verdict.ok) {
      throw new TrainerError(`the plan fails verification, not written: ${verdict.error}`);
    }
    await Deno.rename(temp, path);
    return verdict;
  } finally {
    await Deno.remove(temp).catch(() => {});
  }
}

/** Reads a `--target` file into a topology (keys other than the topology's are ignored). */
function readTargetTopology(path: string): Topology {
  let text: string;
  try {
    text = Deno.readTextFileSync(path);
  } catch {
    throw new UsageError(`--target: cannot read file ${path}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new UsageError(`--target: ${path} is not valid JSON`);
  }
  return topologyFromJson(raw, MODEL, `--target ${path}`, { ignoreOtherKeys: true });
}

/** Parses `--element-size`: a positive integer up to 16. */
function elementSizeOf(raw: string | undefined): number {
  if (raw === undefined) return PLAN_ELEMENT_SIZE;
  const n = Number(raw.trim());
  if (!/^\d+$/.test(raw.trim()) || n < 1 || n > 16) {
    throw new UsageError(
      `--element-size must be an integer in [1, 16], got ${JSON.stringify(raw)}`,
    );
  }
  return n;
}

/**
 * Runs `plan` from parsed flag values: validates them, plans, writes and verifies the file.
 * Resolves to the verdict of the written plan.
 */
export async function runPlan(values: Map<string, string>): Promise<PlanVerdict> {
  for (const flag of ["source-checkpoint", "target", "policy", "out"]) {
    if (!values.get(flag)) throw new UsageError(`--${flag} is required`);
  }
  const fault = values.get("fault") ?? null;
  if (fault !== null && !isFault(fault)) {
    throw new UsageError(`--fault ${fault} is unknown (known: ${FAULT_NAMES.join(", ")})`);
  }
  const policy = values.get("policy")!;
  replicaPolicyByName(policy);
  const elementSize = elementSizeOf(values.get("element-size"));
  const target = readTargetTopology(values.get("target")!);
  const plan = planFromCheckpoint({
    sourceCheckpoint: values.get("source-checkpoint")!,
    target,
    policy,
    elementSize,
  });
  return await writeVerifiedPlan(values.get("out")!, plan);
}
