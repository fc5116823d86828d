/**
 * Reads the process-state documents of each plan-execute phase and of the universal resumes on
 * its target topology, and attaches the comparison to that policy's `plan_sync[]` entry
 * (docs/plan-sync.md, "Plans executed on real bytes"). Never throws for a missing or unreadable
 * document: that is an ERROR of the check, with its reason.
 *
 * @module
 */

import { comparePlanExecution, type ProcessStateDocument } from "../parity/mod.ts";
import type { PlanExecution, PlanSyncSummary } from "../types/summary.ts";
import type { PhaseState } from "./phase_state.ts";

async function readState(path: string | undefined): Promise<ProcessStateDocument | string> {
  if (!path) return "it records no process state";
  try {
    const doc = JSON.parse(await Deno.readTextFile(path));
    if (doc?.schema_version !== 1 || typeof doc.processes !== "object") {
      return `${path} is not a process-state document (schema 1)`;
    }
    return doc as ProcessStateDocument;
  } catch (e) {
    return `${path} cannot be read: ${e instanceof Error ? e.message : e}`;
  }
}

function errorCheck(phase: string, reason: string, against?: string): PlanExecution {
  return {
    phase,
    ...(against ? { against } : {}),
    verdict: "ERROR",
    compared: 0,
    kinds: [],
    mismatches: [],
    mismatch_count: 0,
    reason,
  };
}

/** The plan-execute check of one execute phase against the first reshard that completed. */
async function checkOne(execute: PhaseState, states: PhaseState[]): Promise<PlanExecution> {
  const { spec } = execute;
  if (execute.summary?.status !== "ok") {
    return errorCheck(
      spec.name,
      `${spec.name} did not complete: ${execute.summary?.message ?? ""}`,
    );
  }
  const reshards = states.filter((s) =>
    s.spec.role === "resume" && s.spec.resumeKind === "universal" &&
    s.spec.topologyKey === spec.topologyKey
  );
  const ran = reshards.find((s) => s.summary?.status === "ok");
  if (!ran) {
    return errorCheck(
      spec.name,
      reshards.length > 0
        ? `the reshard ${reshards.map((s) => s.spec.name).join(", ")} did not complete`
        : "no universal resume ran on the plan's target topology",
    );
  }
  const executed = await readState(spec.paths.stateFile);
  const loaded = await readState(ran.spec.paths.stateFile);
  if (typeof executed === "string") return errorCheck(spec.name, executed, ran.spec.name);
  if (typeof loaded === "string") {
    return errorCheck(spec.name, `${ran.spec.name}: ${loaded}`, ran.spec.name);
  }
  return comparePlanExecution(spec.name, ran.spec.name, executed, loaded);
}

/** `planSync` with each policy's plan-execute check attached (in place), and those checks. */
export async function attachPlanExecutions(
  planSync: PlanSyncSummary[],
  states: PhaseState[],
): Promise<PlanExecution[]> {
  const checks: PlanExecution[] = [];
  for (const execute of states.filter((s) => s.spec.role === "execute")) {
    const entry = planSync.find((p) => p.policy === execute.spec.policy);
    // A plan the verifier rejected is never executed: its FAIL is the finding.
    if (execute.summary?.status === "skipped" && entry && !entry.verified) continue;
    const check = await checkOne(execute, states);
    checks.push(check);
    if (entry) entry.execution = check;
  }
  return checks;
}
