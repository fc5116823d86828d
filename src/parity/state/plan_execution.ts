/**
 * The plan-execute check: what a plan built out of the checkpoint's bytes, process by process
 * and expert slot by expert slot, against what DeepSpeed's own reshard (the universal resume on
 * the plan's target topology) held right after its load. Both sides are `process_state.json`
 * documents (docs/plan-sync.md, "Plans executed on real bytes"). PASS only when every process
 * holds the same experts in the same slots and every slot of every kind has the same bytes.
 *
 * @module
 */

import type { PhaseStatus, PlanExecution, PlanSyncSummary, SlotMismatch } from "../../types/mod.ts";

/** One parameter as a process holds it. */
export interface ProcessParameter {
  /** Global expert of each local slot. */
  experts: number[];
  /** Local shape `[slots, ...]`. */
  shape: number[];
  /** Per kind (`module`, `fp32`, `exp_avg`, `exp_avg_sq`): dtype and one digest per slot. */
  [kind: string]: unknown;
}

/** A `process_state.json` document. */
export interface ProcessStateDocument {
  /** Always 1. */
  schema_version: number;
  /** Who wrote it (`resume-universal`, `plan-execute`). */
  source: string;
  /** Processes by rank. */
  processes: Record<string, { ep_rank?: number | null; params: Record<string, ProcessParameter> }>;
}

/** The kinds of tensor compared per slot, in report order. */
const SLOT_KINDS = ["module", "fp32", "exp_avg", "exp_avg_sq"] as const;

/** Mismatches listed in the summary (the count is always complete). */
const MAX_LISTED = 20;

interface KindDigests {
  dtype: string;
  slots: string[];
}

function kindOf(param: ProcessParameter, kind: string): KindDigests | undefined {
  const value = param[kind] as KindDigests | undefined;
  return value && Array.isArray(value.slots) ? value : undefined;
}

function region(shape: number[], expert: number): string {
  return `[${[`${expert}:${expert + 1}`, ...shape.slice(1).map((d) => `0:${d}`)].join(", ")}]`;
}

/**
 * Compares the executed plan's process state with the reshard's, naming every slot that differs
 * (parameter, expert, process, region, kind).
 */
export function comparePlanExecution(
  phase: string,
  against: string,
  executed: ProcessStateDocument,
  reshard: ProcessStateDocument,
): PlanExecution {
  const mismatches: SlotMismatch[] = [];
  let count = 0;
  let compared = 0;
  const kinds = new Set<string>();
  const note = (m: SlotMismatch) => {
    count++;
    if (mismatches.length < MAX_LISTED) mismatches.push(m);
  };
  const processes = [
    ...new Set([
      ...Object.keys(executed.processes),
      ...Object.keys(reshard.processes),
    ]),
  ].sort((a, b) => Number(a) - Number(b));
  for (const proc of processes) {
    const mine = executed.processes[proc]?.params ?? {};
    const theirs = reshard.processes[proc]?.params ?? {};
    const names = [...new Set([...Object.keys(mine), ...Object.keys(theirs)])].sort();
    for (const name of names) {
      const a = mine[name], b = theirs[name];
      const process = Number(proc);
      if (!a || !b) {
        note({
          process,
          parameter: name,
          kind: "all",
          expert: -1,
          slot: -1,
          region: "—",
          detail: !a ? "the executed plan built no shard here" : "the reshard holds no shard here",
        });
        continue;
      }
      for (const kind of SLOT_KINDS) {
        const da = kindOf(a, kind), db = kindOf(b, kind);
        if (!da && !db) continue;
        kinds.add(kind);
        const slots = Math.max(a.experts.length, b.experts.length);
        for (let slot = 0; slot < slots; slot++) {
          compared++;
          const expert = b.experts[slot] ?? a.experts[slot] ?? -1;
          const base = {
            process,
            parameter: name,
            kind,
            expert,
            slot,
            region: region(b.shape, expert),
          };
          if (a.experts[slot] !== b.experts[slot]) {
            note({
              ...base,
              detail: `the plan puts expert ${a.experts[slot] ?? "none"} in slot ${slot}, ` +
                `the reshard expert ${b.experts[slot] ?? "none"}`,
            });
          } else if (!da || !db) {
            note({
              ...base,
              detail: `only the ${!da ? "reshard" : "executed plan"} holds ${kind}`,
            });
          } else if (da.dtype !== db.dtype) {
            note({ ...base, detail: `dtype ${da.dtype} vs the reshard's ${db.dtype}` });
          } else if (da.slots[slot] !== db.slots[slot]) {
            note({ ...base, detail: "bytes differ" });
          }
        }
      }
    }
  }
  const verdict = compared === 0 ? "ERROR" : count > 0 ? "FAIL" : "PASS";
  const first = mismatches[0];
  const reason = verdict === "ERROR"
    ? "no expert slot to compare (neither side recorded expert parameters)"
    : verdict === "PASS"
    ? `${compared} expert slots (${[...kinds].join(", ")}) agree byte for byte on ` +
      `${processes.length} processes`
    : `${count} of ${compared} expert slots differ; first: ${first.parameter} · expert ` +
      `${first.expert} · ${first.kind} · process ${first.process} · region ${first.region}: ` +
      first.detail;
  return {
    phase,
    against,
    verdict,
    compared,
    kinds: [...kinds],
    mismatches,
    mismatch_count: count,
    reason,
  };
}

/**
 * What the pipeline read for one plan-execute phase: how it and the universal resumes on its
 * target topology ended, and the two process-state documents (or why one could not be read).
 * Facts only: {@link planExecutionChecks} decides.
 */
export interface PlanExecutionFacts {
  /** The execute phase. */
  phase: string;
  /** Its replica policy (the `plan_sync[]` entry it belongs to). */
  policy?: string;
  /** How it ended. */
  status: PhaseStatus;
  /** Its end message, if any. */
  message?: string;
  /** The universal resumes on its target topology. */
  reshards: string[];
  /** The first of them that completed, with both documents (or why each is unreadable). */
  ran?: {
    name: string;
    executed: ProcessStateDocument | string;
    loaded: ProcessStateDocument | string;
  };
}

/**
 * The plan-execute checks, one per execute phase, each attached (in place) to its policy's
 * `plan_sync[]` entry. A plan the verifier rejected is never executed: its FAIL is the finding.
 * A phase that did not complete, no reshard that ran, or an unreadable document is an ERROR of
 * the check, with its reason.
 */
export function planExecutionChecks(
  planSync: PlanSyncSummary[],
  facts: readonly PlanExecutionFacts[],
): PlanExecution[] {
  const checks: PlanExecution[] = [];
  for (const execute of facts) {
    const entry = planSync.find((p) => p.policy === execute.policy);
    if (execute.status === "skipped" && entry && !entry.verified) continue;
    const check = _checkOne(execute);
    checks.push(check);
    if (entry) entry.execution = check;
  }
  return checks;
}

function _checkOne(execute: PlanExecutionFacts): PlanExecution {
  const { phase, ran } = execute;
  if (execute.status !== "ok") {
    return _errorCheck(phase, `${phase} did not complete: ${execute.message ?? ""}`);
  }
  if (!ran) {
    return _errorCheck(
      phase,
      execute.reshards.length > 0
        ? `the reshard ${execute.reshards.join(", ")} did not complete`
        : "no universal resume ran on the plan's target topology",
    );
  }
  if (typeof ran.executed === "string") return _errorCheck(phase, ran.executed, ran.name);
  if (typeof ran.loaded === "string") {
    return _errorCheck(phase, `${ran.name}: ${ran.loaded}`, ran.name);
  }
  return comparePlanExecution(phase, ran.name, ran.executed, ran.loaded);
}

function _errorCheck(phase: string, reason: string, against?: string): PlanExecution {
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
