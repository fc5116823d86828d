/**
 * The judge: the one place a run's verdict and findings are decided. Every source of evidence
 * (the metric comparisons, state checks and engine diagnostics of {@link evaluateRun}, schedule
 * bounds, goldens, plan verification and execution, phase failures, interruption and whether the
 * reports were written) enters as typed {@link RunEvidence} (`assembleEvidence` builds it from
 * what the pipeline observed); {@link judge} folds each source by its own rule of
 * {@link VERDICT_RULES} (FAIL > ERROR > ABSTAIN > PASS), reads the root causes and maps the verdict
 * to the exit code ({@link judgeVerdicts}, also used by a suite and by `parity compare`). The
 * pipeline runs the phases and publishes the {@link Judgement}; it decides nothing.
 *
 * @module
 */

import {
  type ComparisonSummary,
  type Diagnostic,
  EXIT_CODES,
  type ExitCode,
  type Finding,
  type GoldenSummary,
  type NoiseFloorSummary,
  type PhaseSummary,
  type PlanExecution,
  type PlanSyncSummary,
  type StateCheckSummary,
  type Verdict,
} from "../types/mod.ts";
import { diagnosticVerdict } from "./codes.ts";
import { capByInputErrors, type InputErrors } from "./evidence_rules.ts";
import { worstVerdict } from "./worst_verdict.ts";
import { findRootCauses, type ResumeKinds } from "./root_cause.ts";

/** Stable codes of the diagnostics the judge itself adds. */
export const JUDGE_CODES = {
  /** SIGINT/SIGTERM stopped the harness. */
  interrupted: "interrupted",
  /** The reports (or history) could not be written. */
  reportsNotWritten: "reports-not-written",
} as const;

/** What the metrics engine ({@link evaluateRun}) found: its part of the evidence. */
export interface MetricsEvidence {
  /** Lane results. */
  comparisons: ComparisonSummary[];
  /** Restored-state checks, one per resume phase. */
  state_checks: StateCheckSummary[];
  /** Repeated-baseline evidence. */
  noise_floor: NoiseFloorSummary;
  /** Reader, pre-flight and sanity findings; each imposes {@link diagnosticVerdict}. */
  diagnostics: Diagnostic[];
}

/** The baseline judged against its stored golden. */
export interface GoldenEvidence {
  /** The golden block of summary.json; its verdict is the golden's. */
  summary: GoldenSummary;
  /** `golden~baseline` comparisons (recorded beside the others). */
  comparisons: ComparisonSummary[];
  /** `golden-*` findings (recorded; the golden verdict already weighs them). */
  diagnostics: Diagnostic[];
}

/** Everything the judge weighs for one run. */
export interface RunEvidence {
  /** Every phase as it ended: a failed or timed-out phase makes the run ERROR. */
  phases: PhaseSummary[];
  /** Resume kind of each phase, from the resolved plan (root-cause rules read it). */
  resumeKinds: ResumeKinds;
  /** Optimizer step after which the split saved. */
  saveAt: number;
  /** What the experiment leaves unchecked: recorded first, never folded into the verdict. */
  warnings: Diagnostic[];
  /** The metrics engine's judgement. */
  metrics: MetricsEvidence;
  /** Metrics logged outside a phase's schedule: any makes the run ERROR. */
  scheduleBounds: Diagnostic[];
  /** The golden judgement, when the experiment asks for one. */
  golden?: GoldenEvidence;
  /** Plan verification per policy (an unverified plan FAILs), executions attached. */
  planSync: PlanSyncSummary[];
  /** Every plan-execute check, each with its own verdict. */
  planExecutions: PlanExecution[];
  /** What stopped the harness early, if anything (the run is then ERROR). */
  interrupted: { reason: string } | null;
  /** Why the reports or history could not be written, one entry per failure (each ERROR). */
  reportFailures: string[];
}

/** A verdict and the exit code it maps to (README, "Exit codes"). */
export interface VerdictExit {
  /** Worst verdict over every source. */
  verdict: Verdict;
  /** The process exit code of that verdict. */
  exit_code: ExitCode;
}

/** The judge's answer: the verdict, its exit code and every judged record of summary.json. */
export interface Judgement extends VerdictExit {
  /** The engine's comparisons, then the golden's. */
  comparisons: ComparisonSummary[];
  /** Restored-state checks. */
  state_checks: StateCheckSummary[];
  /** Plan-sync policies. */
  plan_sync: PlanSyncSummary[];
  /** Repeated-baseline evidence. */
  noise_floor: NoiseFloorSummary;
  /** Warnings, engine, schedule and golden diagnostics, then the judge's own. */
  diagnostics: Diagnostic[];
  /** The root-cause card, most decisive first. */
  findings: Finding[];
}

/** One source of evidence and the verdicts it imposes. */
export interface VerdictRule {
  /** The source, as docs/parity.md names it. */
  source: string;
  /** The verdicts this source imposes (none: it does not move the run's verdict). */
  verdicts: (evidence: RunEvidence) => Verdict[];
}

/** The metrics engine's sources and the verdicts each imposes (one rule each, shared below). */
const METRICS_RULES: readonly {
  source: string;
  verdicts: (metrics: Omit<MetricsEvidence, "noise_floor">) => Verdict[];
}[] = [
  { source: "comparisons", verdicts: (m) => m.comparisons.map((c) => c.verdict) },
  { source: "state checks", verdicts: (m) => stateCheckVerdicts(m.state_checks) },
  { source: "diagnostics", verdicts: (m) => m.diagnostics.map(diagnosticVerdict) },
];

/** How each source of evidence moves the verdict. */
export const VERDICT_RULES: readonly VerdictRule[] = [
  ...METRICS_RULES.map(({ source, verdicts }) => ({
    source,
    verdicts: (e: RunEvidence) => verdicts(e.metrics),
  })),
  { source: "plan execution", verdicts: (e) => e.planExecutions.map((x) => x.verdict) },
  { source: "schedule bounds", verdicts: (e) => e.scheduleBounds.length > 0 ? ["ERROR"] : [] },
  { source: "golden", verdicts: (e) => e.golden ? [e.golden.summary.verdict] : [] },
  {
    source: "phases",
    verdicts: (e) =>
      e.phases.some((p) => p.status === "failed" || p.status === "timeout") ? ["ERROR"] : [],
  },
  { source: "interruption", verdicts: (e) => e.interrupted ? ["ERROR"] : [] },
  { source: "plan verification", verdicts: (e) => e.planSync.map((p) => planVerdict(p.verified)) },
  { source: "reports", verdicts: (e) => e.reportFailures.length > 0 ? ["ERROR"] : [] },
];

/**
 * The verdict of the metrics engine's part alone (comparisons, state checks, diagnostics): what
 * {@link evaluateRun} reports, by the very rules {@link judge} applies to that part.
 */
export function metricsVerdict(metrics: Omit<MetricsEvidence, "noise_floor">): Verdict {
  return worstVerdict(METRICS_RULES.flatMap((rule) => rule.verdicts(metrics)));
}

/**
 * A replica plan's verdict: PASS when the verifier proved it, FAIL when it rejected it (a run's
 * `plan_sync[]`, and `parity verify-plan` on its own).
 */
export function planVerdict(verified: boolean): Verdict {
  return verified ? "PASS" : "FAIL";
}

/**
 * The worst of several verdicts and its exit code: the one place a verdict becomes an exit code
 * (a run's, a suite's over its runs' verdicts, `parity compare`'s over its comparisons').
 */
export function judgeVerdicts(verdicts: Iterable<Verdict>): VerdictExit {
  const verdict = worstVerdict(verdicts);
  return { verdict, exit_code: EXIT_CODES[verdict] };
}

/**
 * Judges one run: the verdict, its exit code, the records of summary.json and the root-cause
 * card. The run's evidence may be judged again once publishing adds a report failure.
 */
export function judge(run: RunEvidence): Judgement {
  // Steps outside the schedule are known only after the engine: they cap its comparisons here.
  const bounds = inputErrors(run.scheduleBounds);
  const evidence: RunEvidence = {
    ...run,
    metrics: {
      ...run.metrics,
      comparisons: run.metrics.comparisons.map((c) => capByInputErrors(c, bounds)),
    },
  };
  const { verdict, exit_code } = judgeVerdicts(
    VERDICT_RULES.flatMap((rule) => rule.verdicts(evidence)),
  );
  const comparisons = [...evidence.metrics.comparisons, ...(evidence.golden?.comparisons ?? [])];
  const diagnostics = [
    ...evidence.warnings,
    ...evidence.metrics.diagnostics,
    ...evidence.scheduleBounds,
    ...(evidence.golden?.diagnostics ?? []),
  ];
  const findings = findRootCauses({
    comparisons,
    state_checks: evidence.metrics.state_checks,
    diagnostics,
    phases: evidence.phases,
    noise_floor: evidence.metrics.noise_floor,
    save_at: evidence.saveAt,
    plan_sync: evidence.planSync,
  }, evidence.resumeKinds);
  if (evidence.interrupted) {
    diagnostics.push({
      level: "error",
      code: JUDGE_CODES.interrupted,
      message:
        `the harness was interrupted by ${evidence.interrupted.reason}; completed phases are kept`,
    });
  }
  for (const reason of evidence.reportFailures) {
    diagnostics.push({
      level: "error",
      code: JUDGE_CODES.reportsNotWritten,
      message: `the reports could not be written: ${reason}`,
    });
  }
  return {
    verdict,
    exit_code,
    comparisons,
    state_checks: evidence.metrics.state_checks,
    plan_sync: evidence.planSync,
    noise_floor: evidence.metrics.noise_floor,
    diagnostics,
    findings,
  };
}

/**
 * Adds a report (or history) failure to a run's evidence and judges it again: a run without its
 * reports is never PASS. Returns the new judgement.
 */
export function judgeReportFailure(run: RunEvidence, reason: string): Judgement {
  run.reportFailures.push(reason);
  return judge(run);
}

/** The `error`-level diagnostics of each phase, codes once each. */
function inputErrors(diagnostics: readonly Diagnostic[]): InputErrors[] {
  const byPhase = new Map<string, Set<string>>();
  for (const d of diagnostics) {
    if (d.level !== "error" || d.phase === undefined) continue;
    byPhase.set(d.phase, (byPhase.get(d.phase) ?? new Set()).add(d.code));
  }
  return [...byPhase].map(([phase, codes]) => ({ phase, codes: [...codes] }));
}

function stateCheckVerdicts(checks: StateCheckSummary[]): Verdict[] {
  return checks.flatMap((s) => s.verdict === "N/A" ? [] : [s.verdict]);
}
