/**
 * The `deepspeed` preset's planner: plans the resharding of a real AutoEP checkpoint with the
 * harness's affine planner. The source maps are the affine maps v1 DeepSpeed itself records in
 * the checkpoint (`ds_autoep_layers[*].affine_maps`, read by `autoep_layout.py --maps` with the
 * venv's python); the target maps place the experts contiguously over the target `autoep_size`,
 * as AutoEP does. The plan file is verified before it appears.
 *
 *     deno run -A adapters/deepspeed/plan_autoep.ts --source-checkpoint <tag folder> \
 *       --target target.json --policy balanced --out plan.json [--element-size 4] [--python PY]
 *
 * Locations are EP ranks; EP rank p sits first on global rank p (expert-parallel groups are
 * consecutive ranks), so a copy from source EP rank p to target EP rank p counts as local.
 * Executing such a plan inside DeepSpeed needs the seed pull requests' code, which no release
 * has (docs/deepspeed.md): the plan is verified and its traffic reported, never executed here.
 *
 * @module
 */

import { Command } from "commander";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { AffineError } from "../../src/affine/affine_errors.ts";
import { mapFromDict, placementToMap, uniformPlacement } from "../../src/affine/map.ts";
import { buildPlanFile, readPlanFile, writePlanFile } from "../../src/affine/plan_file.ts";
import { type MapPair, planTransfers } from "../../src/affine/plan_transfers.ts";
import { getReplicaPolicy } from "../../src/affine/policies.ts";
import { verifyPlan } from "../../src/affine/verify.ts";

const HERE = dirname(fileURLToPath(import.meta.url));

/** One AutoEP layer as `autoep_layout.py --maps` prints it. */
interface LayoutLayer {
  num_experts: number;
  ep_size: number;
  params: { name: string; logical_shape: number[]; map: unknown }[];
}

/** A failure with a one-line message (exit 1, no stack trace). */
class PlanError extends Error {}

/** Reads the checkpoint's AutoEP layout with the venv's python. */
async function readLayout(python: string, checkpoint: string): Promise<LayoutLayer[]> {
  const out = await new Deno.Command(python, {
    args: [join(HERE, "autoep_layout.py"), "--maps", checkpoint],
    stdout: "piped",
    stderr: "piped",
  }).output().catch((e) => {
    throw new PlanError(`cannot run ${python}: ${e.message} (run deno task setup-deepspeed)`);
  });
  if (!out.success) {
    throw new PlanError(`autoep_layout.py failed: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
  return JSON.parse(new TextDecoder().decode(out.stdout)).layers;
}

/** Options of {@link planAutoEp}. */
export interface PlanAutoEpOptions {
  /** Tag folder of the native checkpoint. */
  sourceCheckpoint: string;
  /** Target `autoep_size` (default: the checkpoint's). */
  targetEpSize?: number;
  /** Replica policy name. */
  policy: string;
  /** Bytes per element for the traffic figures. */
  elementSize: number;
  /** Plan file to write. */
  out: string;
  /** Python of the DeepSpeed venv. */
  python: string;
}

/** Plans every expert parameter of the checkpoint onto the target EP size and writes the plan. */
export async function planAutoEp(options: PlanAutoEpOptions): Promise<void> {
  const layers = await readLayout(options.python, options.sourceCheckpoint);
  if (layers.length === 0) throw new PlanError("the checkpoint records no AutoEP layer");
  const sourceEp = layers[0].ep_size;
  const targetEp = options.targetEpSize ?? sourceEp;
  const pairs = new Map<string, MapPair>();
  for (const layer of layers) {
    if (layer.num_experts % targetEp !== 0) {
      throw new PlanError(`autoep_size ${targetEp} does not divide ${layer.num_experts} experts`);
    }
    const target = uniformPlacement(layer.num_experts, targetEp);
    for (const param of layer.params) {
      pairs.set(param.name, {
        source: mapFromDict(param.map, param.name),
        target: placementToMap(target, param.logical_shape),
      });
    }
  }
  const processes = (n: number) => new Map([...Array(n).keys()].map((p) => [p, p]));
  const sourceProcesses = processes(sourceEp);
  const targetProcesses = processes(targetEp);
  const plans = planTransfers(pairs, {
    policy: getReplicaPolicy(options.policy),
    elementSize: options.elementSize,
    sourceProcesses,
    targetProcesses,
  });
  const plan = buildPlanFile(plans, {
    policy: options.policy,
    pairs,
    sourceProcesses,
    targetProcesses,
  });
  const temp = join(dirname(options.out), `.${basename(options.out)}.tmp-${Deno.pid}`);
  try {
    await writePlanFile(temp, plan);
    const verdict = verifyPlan(await readPlanFile(temp));
    if (!verdict.ok) throw new PlanError(`the plan fails verification: ${verdict.error}`);
    await Deno.rename(temp, options.out);
  } finally {
    await Deno.remove(temp).catch(() => {});
  }
}

if (import.meta.main) {
  const program = new Command("plan_autoep")
    .requiredOption("--source-checkpoint <dir>", "native tag folder (<dir>/global_step<N>)")
    .requiredOption("--target <file>", "target topology JSON (autoep_size; other keys ignored)")
    .requiredOption("--policy <name>", "replica policy")
    .requiredOption("--out <file>", "plan file to write")
    .option("--element-size <n>", "bytes per element", "4")
    .option("--python <path>", "python of the DeepSpeed venv", "python3")
    .option("--fault <name>", "accepted so every process can get the run's fault; none acts here")
    .exitOverride();
  try {
    program.parse(Deno.args, { from: "user" });
    const o = program.opts();
    const target = JSON.parse(await Deno.readTextFile(o.target));
    await planAutoEp({
      sourceCheckpoint: o.sourceCheckpoint,
      targetEpSize: typeof target.autoep_size === "number" ? target.autoep_size : undefined,
      policy: o.policy,
      elementSize: Number(o.elementSize),
      out: o.out,
      python: o.python,
    });
  } catch (e) {
    if (e instanceof PlanError || e instanceof AffineError || e instanceof SyntaxError) {
      console.error(`plan_autoep: ${e.message}`);
      Deno.exit(1);
    }
    if ((e as { code?: string }).code?.startsWith("commander.")) Deno.exit(2);
    throw e;
  }
}
