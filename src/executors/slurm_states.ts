/**
 * Slurm job states and what they mean for a phase: still going (pending, running, requeued,
 * suspended...), or ended with a phase status and a reason. Node failure and preemption are
 * flaky infrastructure: the retry policy runs the phase again without a log match.
 *
 * @module
 */

/** How an ended job maps to a phase. */
export interface JobOutcome {
  /** Phase status. */
  status: "ok" | "failed" | "timeout";
  /** Node failure, preemption, boot failure: the cluster's fault, not the phase's. */
  infra: boolean;
  /** One line: `Slurm job 12 FAILED (NonZeroExitCode) on node1, exit code 1`. */
  message: string;
}

/** States of a job that has not ended yet (a requeued job goes back through them). */
const ACTIVE_STATES: ReadonlySet<string> = new Set([
  "PENDING",
  "CONFIGURING",
  "RUNNING",
  "COMPLETING",
  "REQUEUED",
  "REQUEUE_FED",
  "REQUEUE_HOLD",
  "RESIZING",
  "SUSPENDED",
  "STOPPED",
  "SIGNALING",
  "STAGE_OUT",
  "RESV_DEL_HOLD",
]);

const INFRA_STATES = new Set(["NODE_FAIL", "PREEMPTED", "BOOT_FAIL"]);

/** Whether `state` is the cluster's fault (node failure, preemption, boot failure). */
export function isInfraState(state: string): boolean {
  return INFRA_STATES.has(baseState(state));
}

/** Whether `state` (e.g. `RUNNING`, `CANCELLED by 0`) is one a job leaves again. */
export function isActiveState(state: string): boolean {
  return ACTIVE_STATES.has(baseState(state));
}

/** `CANCELLED by 0` → `CANCELLED`; `COMPLETED+` → `COMPLETED`. */
export function baseState(state: string): string {
  return state.trim().split(/[\s+]/)[0].toUpperCase();
}

/**
 * The phase outcome of an ended job. `exitCode` is the command's own exit code when known
 * (the script's exit-code file or Slurm's `ExitCode`).
 */
export function jobOutcome(
  jobId: string,
  state: string,
  details: { reason?: string; nodes?: string; exitCode?: number | null },
): JobOutcome {
  const base = baseState(state);
  const where = details.nodes ? ` on ${details.nodes}` : "";
  const why = details.reason && details.reason !== "None" ? ` (${details.reason})` : "";
  const code = details.exitCode !== undefined && details.exitCode !== null
    ? `, exit code ${details.exitCode}`
    : "";
  const message = `Slurm job ${jobId} ${base}${why}${where}${code}`;
  if (base === "COMPLETED" && (details.exitCode ?? 0) === 0) {
    return { status: "ok", infra: false, message };
  }
  if (base === "TIMEOUT" || base === "DEADLINE") {
    return { status: "timeout", infra: false, message: `${message}: hit its Slurm time limit` };
  }
  if (isInfraState(base)) return { status: "failed", infra: true, message };
  if (base === "OUT_OF_MEMORY") {
    return { status: "failed", infra: false, message: `${message}: out of memory` };
  }
  return { status: "failed", infra: false, message };
}
