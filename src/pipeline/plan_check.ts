/**
 * Verifies a plan file written by a planner phase and turns the verifier's statistics into
 * the `plan_sync[]` entry of summary.json. Every plan is verified, whoever produced it.
 *
 * @module
 */

import { planSyncSummary, verifyPlan } from "../affine/mod.ts";
import type { PlanSyncSummary } from "./summary.ts";

/** Reads, verifies and summarises one plan file; never throws for a bad or unreadable plan. */
export async function checkPlanFile(
  phase: string,
  policy: string,
  path: string,
): Promise<PlanSyncSummary> {
  let raw: unknown;
  try {
    raw = JSON.parse(await Deno.readTextFile(path));
  } catch (e) {
    return {
      ...planSyncSummary(policy, { ok: false, error: null, stats: null, executed: false }),
      phase,
      error: `unreadable plan ${path}: ${e instanceof Error ? e.message : e}`,
    };
  }
  const verdict = verifyPlan(raw);
  const summary: PlanSyncSummary = { ...planSyncSummary(policy, verdict), phase };
  const stats = verdict.stats;
  if (stats) {
    const per: NonNullable<PlanSyncSummary["per_process"]> = {};
    for (const [proc, send] of Object.entries(stats.sendBytesByProcess)) {
      per[proc] = { send, recv: 0 };
    }
    for (const [proc, recv] of Object.entries(stats.receiveBytesByProcess)) {
      per[proc] = { send: per[proc]?.send ?? 0, recv };
    }
    summary.per_process = per;
  }
  return summary;
}
