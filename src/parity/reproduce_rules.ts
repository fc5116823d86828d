/**
 * The rules of the reproduce commands: what a replay of a finished run (`parity rerun`), phase by
 * phase stored against rerun, proves (REPRODUCED, DRIFTED or ERROR), and the exit code of each
 * rerun verdict and bisection outcome (README, "Reproduce"). The commands run and compare; these
 * rules decide.
 *
 * @module
 */

import { EXIT_CODES, type PhaseSummary, type Verdict } from "../types/mod.ts";

/** Verdict of a rerun. */
export type RerunVerdict = "REPRODUCED" | "DRIFTED" | "ERROR";

/** How one training phase's metrics came out, stored against rerun. */
export type ReproductionOutcome = "identical" | "differs" | "not-compared" | "rerun-failed";

/**
 * Exit codes of `parity rerun`, from the one table; a bad run folder or usage is a
 * `StoredRunError` (exit 2).
 */
export const RERUN_EXIT_CODES: Record<RerunVerdict, number> = {
  REPRODUCED: EXIT_CODES.PASS,
  DRIFTED: EXIT_CODES.FAIL,
  ERROR: EXIT_CODES.ERROR,
};

/**
 * Judges a rerun: ERROR when it was interrupted or a phase failed to rerun, DRIFTED when any
 * phase differs, REPRODUCED when some phase was compared and all compared are identical, and
 * ERROR when nothing could be compared (no evidence either way).
 */
export function judgeRerun(
  rerun: { interrupted: boolean; outcomes: readonly ReproductionOutcome[] },
): { verdict: RerunVerdict; exit_code: number } {
  const { outcomes } = rerun;
  const verdict: RerunVerdict = rerun.interrupted || outcomes.includes("rerun-failed")
    ? "ERROR"
    : outcomes.includes("differs")
    ? "DRIFTED"
    : outcomes.includes("identical")
    ? "REPRODUCED"
    : "ERROR";
  return { verdict, exit_code: RERUN_EXIT_CODES[verdict] };
}

/** How a bisection (`parity bisect`, over commits or package releases) ended. */
export type BisectOutcome = "found" | "ambiguous" | "interrupted";

/** Exit code of a bisection: 0 when the first bad one was named, 3 ambiguous or interrupted. */
export function bisectExitCode(outcome: BisectOutcome): number {
  return outcome === "found" ? EXIT_CODES.PASS : EXIT_CODES.ERROR;
}

/** A tested release: good (PASS), bad (FAIL) or ERROR (it cannot run the experiment). */
export type ReleaseMark = "good" | "bad" | "ERROR";

/**
 * Why a release cannot run the experiment, or undefined when it can: a phase crashed or timed
 * out (an import error, a crash at load; even where a save check already FAILs the run), or the
 * run is ERROR or ABSTAIN.
 */
export function releaseCannotRun(
  run: { verdict: Verdict; phases: readonly PhaseSummary[] },
): string | undefined {
  const failed = run.phases.filter((p) => p.status === "failed" || p.status === "timeout");
  return failed.length > 0
    ? `${failed.map((p) => `${p.name} ${p.status}`).join(", ")} (run ${run.verdict})`
    : run.verdict === "ERROR" || run.verdict === "ABSTAIN"
    ? `the run is ${run.verdict}`
    : undefined;
}

/**
 * A tested release's mark and why it is ERROR: one that cannot run is ERROR whatever its verdict;
 * otherwise PASS is good, FAIL bad and anything else ERROR.
 */
export function releaseMark(
  out: { verdict: Verdict; cannotRun?: string },
): { mark: ReleaseMark; reason?: string } {
  const mark: ReleaseMark = out.cannotRun !== undefined
    ? "ERROR"
    : out.verdict === "PASS"
    ? "good"
    : out.verdict === "FAIL"
    ? "bad"
    : "ERROR";
  const reason = out.cannotRun ?? (mark === "ERROR" ? `the run is ${out.verdict}` : undefined);
  return { mark, ...(reason !== undefined ? { reason } : {}) };
}
