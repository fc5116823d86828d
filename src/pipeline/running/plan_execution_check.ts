/**
 * Reads what the plan-execute check needs: how each plan-execute phase and the universal resumes
 * on its target topology ended, and their process-state documents (docs/plan-sync.md, "Plans
 * executed on real bytes"). Never throws for a missing or unreadable document: the reason is
 * recorded, and parity's `planExecutionChecks` makes it an ERROR of the check. Decides nothing.
 *
 * @module
 */

import type { PlanExecutionFacts, ProcessStateDocument } from "../../parity/mod.ts";
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

/** The facts of one execute phase: the first reshard that completed and both documents. */
async function readOne(execute: PhaseState, states: PhaseState[]): Promise<PlanExecutionFacts> {
  const { spec, summary } = execute;
  const reshards = states.filter((s) =>
    s.spec.role === "resume" && s.spec.resumeKind === "universal" &&
    s.spec.topologyKey === spec.topologyKey
  );
  const facts: PlanExecutionFacts = {
    phase: spec.name,
    ...(spec.policy !== undefined ? { policy: spec.policy } : {}),
    status: summary?.status ?? "skipped",
    ...(summary?.message !== undefined ? { message: summary.message } : {}),
    reshards: reshards.map((s) => s.spec.name),
  };
  const ran = reshards.find((s) => s.summary?.status === "ok");
  if (facts.status !== "ok" || !ran) return facts;
  const [executed, loaded] = await Promise.all([
    readState(spec.paths.stateFile),
    readState(ran.spec.paths.stateFile),
  ]);
  return { ...facts, ran: { name: ran.spec.name, executed, loaded } };
}

/** The facts of every plan-execute phase of the run, in plan order. */
export function readPlanExecutions(states: PhaseState[]): Promise<PlanExecutionFacts[]> {
  return Promise.all(
    states.filter((s) => s.spec.role === "execute").map((s) => readOne(s, states)),
  );
}
