/**
 * Verifies a plan file written by a planner phase and turns the verifier's statistics into
 * the `plan_sync[]` entry of summary.json (docs/plan-sync.md). Every plan is verified, whoever
 * produced it.
 *
 * @module
 */

import { type PlanVerdict, verifyPlan } from "../affine/mod.ts";
import type { PlanSyncSummary } from "../types/summary.ts";

/** The `plan_sync[]` record of one policy's plan from the verifier's verdict. */
export function planSyncSummary(
  phase: string,
  policy: string,
  verdict: PlanVerdict,
): PlanSyncSummary {
  const s = verdict.stats;
  const out: PlanSyncSummary = {
    policy,
    phase,
    verified: verdict.ok,
    segments: s?.segments ?? 0,
    moved_bytes: s?.movedBytes ?? 0,
    local_bytes: s?.localBytes ?? 0,
    max_process_bytes: s?.maxProcessSendBytes ?? 0,
    mean_process_bytes: s?.meanProcessSendBytes ?? 0,
  };
  if (verdict.error) out.error = verdict.error;
  if (s) {
    const per: NonNullable<PlanSyncSummary["per_process"]> = {};
    for (const [proc, send] of Object.entries(s.sendBytesByProcess)) per[proc] = { send, recv: 0 };
    for (const [proc, recv] of Object.entries(s.receiveBytesByProcess)) {
      per[proc] = { send: per[proc]?.send ?? 0, recv };
    }
    out.per_process = per;
  }
  return out;
}

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
      ...planSyncSummary(phase, policy, { ok: false, error: null, stats: null, executed: false }),
      error: `unreadable plan ${path}: ${e instanceof Error ? e.message : e}`,
    };
  }
  return planSyncSummary(phase, policy, verifyPlan(raw));
}
