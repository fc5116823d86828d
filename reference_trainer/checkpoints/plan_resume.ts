/**
 * The `plan` resume loader (`train --resume-kind plan --plan <plan.json>`): builds the target
 * topology's shards by executing a verified transfer plan on a native checkpoint's source
 * shards. The plan must be made for this run: every parameter present, each `target_map` equal
 * to the run's layout and each `source_map` equal to the checkpoint's. fp32, `exp_avg` and
 * `exp_avg_sq` are moved by the same segments; module weights are derived from fp32 (as the
 * universal loader does); steps, scheduler, RNG and sampler come from the checkpoint. ZeRO
 * flat partitions are regrouped by `readNative`, outside the plan.
 *
 * @module
 */

import {
  AffineError,
  executeSegments,
  mapToDict,
  type PlanFile,
  readPlanFile,
  verifyPlan,
} from "../../src/affine/mod.ts";
import { describeTopology, readNative } from "./checkpoint.ts";
import {
  canonicalJson,
  CheckpointError,
  type Layout,
  type LoadedCheckpoint,
  type ResumeRequest,
  type ShardSet,
  UsageError,
} from "../model/mod.ts";

/** Reads a plan file; every problem is a checkpoint error naming the file. */
async function readPlanForResume(path: string): Promise<PlanFile> {
  try {
    return await readPlanFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) throw new CheckpointError(`plan ${path} does not exist`);
    if (e instanceof SyntaxError) throw new CheckpointError(`plan ${path} is not valid JSON`);
    if (e instanceof AffineError) throw new CheckpointError(`plan ${path}: ${e.message}`);
    throw e;
  }
}

/** Which side of a plan {@link checkPlanMaps} checks, and how its messages name it. */
export interface PlanSide {
  /** The plan field compared. */
  field: "source_map" | "target_map";
  /** What a mismatch means the plan was made for (`target topology`, `checkpoint`). */
  what: string;
  /** Whose layout it is compared with (`this run's`, `<folder>'s`). */
  whose: string;
}

/**
 * Checks that a plan covers exactly the layout's parameters and that its maps on one side
 * equal the layout's (dict form, key order ignored).
 *
 * @throws {CheckpointError} naming the first parameter that does not fit.
 */
function checkPlanMaps(
  plan: PlanFile,
  planPath: string,
  layout: Layout,
  side: PlanSide,
): void {
  const names = layout.specs.map((s) => s.name);
  for (const name of names) {
    const entry = plan.parameters[name];
    if (!entry) throw new CheckpointError(`plan ${planPath} has no parameter ${name}`);
    if (canonicalJson(entry[side.field]) !== canonicalJson(mapToDict(layout.maps.get(name)!))) {
      throw new CheckpointError(
        `plan ${planPath} was made for another ${side.what}: parameters.${name}.${side.field} ` +
          `differs from ${side.whose} (${describeTopology(layout.topology)})`,
      );
    }
  }
  const extra = Object.keys(plan.parameters).find((n) => !names.includes(n));
  if (extra !== undefined) {
    throw new CheckpointError(`plan ${planPath} has parameter ${extra}, which the model lacks`);
  }
}

/** Loads a native checkpoint onto the request's layout by executing its `--plan` file. */
export async function loadThroughPlan(request: ResumeRequest): Promise<LoadedCheckpoint> {
  const { path, layout, plan: planPath } = request;
  if (planPath === null) throw new UsageError(`--resume-kind plan needs --plan`);
  const plan = await readPlanForResume(planPath);
  checkPlanMaps(plan, planPath, layout, {
    field: "target_map",
    what: "target topology",
    whose: "this run's",
  });
  const verdict = verifyPlan(plan);
  if (!verdict.ok) {
    throw new CheckpointError(`plan ${planPath} is refused by the verifier: ${verdict.error}`);
  }
  const ck = readNative(path);
  checkPlanMaps(plan, planPath, ck.layout, {
    field: "source_map",
    what: "checkpoint",
    whose: `${path}'s`,
  });
  const shards = new Map<string, ShardSet>();
  for (const spec of layout.specs) {
    const entry = plan.parameters[spec.name];
    const source = ck.shards.get(spec.name)!;
    shards.set(spec.name, {
      fp32: executeSegments(entry, source.fp32),
      expAvg: executeSegments(entry, source.expAvg),
      expAvgSq: executeSegments(entry, source.expAvgSq),
    });
  }
  return { kind: "plan", path, common: ck.common, shards };
}
