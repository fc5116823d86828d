/**
 * Verifies a plan file written by a planner phase and turns the verifier's statistics into
 * the `plan_sync[]` entry of summary.json. Every plan is verified, whoever produced it.
 *
 * @module
 */

import { readPlanFile, verifyPlan } from "../affine/mod.ts";
import type { PlanSyncSummary } from "./summary.ts";

/** Reads, verifies and summarises one plan file; never throws for a bad plan. */
export async function checkPlanFile(
  phase: string,
  policy: string,
  path: string,
  elementSize?: number,
): Promise<PlanSyncSummary> {
  const empty: PlanSyncSummary = {
    policy,
    phase,
    verified: false,
    segments: 0,
    moved_bytes: 0,
    local_bytes: 0,
    max_process_bytes: 0,
    mean_process_bytes: 0,
  };
  let plan;
  try {
    plan = readPlanFile(await Deno.readTextFile(path));
  } catch (e) {
    return { ...empty, error: `unreadable plan: ${e instanceof Error ? e.message : e}` };
  }
  const result = verifyPlan(plan, { elementSize });
  const stats = result.stats;
  const perProcess: PlanSyncSummary["per_process"] = {};
  for (const [proc, load] of Object.entries(stats.perProcess)) {
    perProcess[proc] = { send: load.send, recv: load.recv, local: load.local };
  }
  return {
    policy,
    phase,
    verified: result.ok,
    ...(result.ok ? {} : { error: result.errors[0] }),
    segments: stats.segments,
    moved_bytes: stats.movedBytes,
    local_bytes: stats.localBytes,
    max_process_bytes: stats.maxProcessBytes,
    mean_process_bytes: stats.meanProcessBytes,
    per_process: perProcess,
  };
}
