/**
 * Verifies a plan file written by a planner phase and turns the verifier's statistics into
 * the `plan_sync[]` entry of summary.json (docs/plan-sync.md). Every plan is verified, whoever
 * produced it; a plan made by another planner (its file names one) also gets the harness
 * planner's second opinion on the same maps.
 *
 * @module
 */

import { parsePlanFile, type PlanVerdict, secondOpinion, verifyPlan } from "../../affine/mod.ts";
import type { PlannerRecord, PlanSyncSummary, SecondOpinion } from "../../types/mod.ts";
import { HARNESS_VERSION } from "../store/mod.ts";

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

/** The plan file's `planner` record as summary.json keeps it (known string fields only). */
function plannerRecord(raw: Record<string, unknown>): PlannerRecord {
  const out: PlannerRecord = { name: String(raw.name) };
  for (const key of ["api", "version", "policy_fidelity", "fault", "fault_parameter"] as const) {
    if (typeof raw[key] === "string") out[key] = raw[key] as string;
  }
  return out;
}

/** The harness planner's opinion of a foreign plan, as summary.json keeps it. */
function opinionOf(raw: unknown): SecondOpinion {
  const found = secondOpinion(parsePlanFile(raw));
  return {
    planner: `parity ${HARNESS_VERSION}`,
    available: found.available,
    equal: found.equal,
    parameters: found.parameters,
    differing_parameters: found.differingParameters,
    ...(found.firstDifference ? { first_difference: found.firstDifference } : {}),
  };
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
  const summary = planSyncSummary(phase, policy, verifyPlan(raw));
  const planner = (raw as { planner?: unknown }).planner;
  if (planner && typeof planner === "object") {
    summary.planner = plannerRecord(planner as Record<string, unknown>);
    if (summary.verified) summary.second_opinion = opinionOf(raw);
  }
  return summary;
}
