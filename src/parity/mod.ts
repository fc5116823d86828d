/**
 * The parity engine: exact and tolerance lanes over metric series, default comparison
 * planning, the noise floor (ABSTAIN, `tolerance: auto`), restored-state digest checks,
 * pre-flight diagnostics, the metrics judgement ({@link evaluateRun}), the run's verdict and
 * findings ({@link judge}), `losses.csv`
 * ({@link lossesCsv}) and the comparison behind `parity compare` ({@link compareMetricsFiles}).
 *
 * @example
 * ```ts
 * import { evaluateRun } from "./mod.ts";
 * const evaluation = await evaluateRun({
 *   steps: 40,
 *   saveAt: 20,
 *   metrics: ["loss"],
 *   tolerance: { rtol: 1e-4, atol: 0, max_failures: 0 },
 *   drift: { early_steps: 10, early_ulp: 16, envelope: 1, blocks: 10, bias_t: 5 },
 *   phases: [
 *     { name: "baseline", role: "baseline", status: "ok", metricsPath: "b.jsonl" },
 *     { name: "split", role: "split", status: "ok", metricsPath: "s.jsonl" },
 *     { name: "resume-native", role: "resume", status: "ok", metricsPath: "r.jsonl" },
 *   ],
 * });
 * evaluation.verdict; // "PASS" | "FAIL" | "ERROR" | "ABSTAIN"
 * ```
 *
 * @module
 */

export * from "./types.ts";
export {
  driftOptions,
  evaluateRun,
  type JudgeOptions,
  judgeSeries,
  type ResolvedTolerance,
  resolveTolerance,
  unjudgedComparison,
} from "./evaluate.ts";
export {
  compareLane,
  type Lane,
  type LaneOptions,
  type LaneResult,
  rangeWindow,
  type StepRange,
  unionWindow,
} from "./lanes/mod.ts";
export {
  compareDrift,
  driftFailureText,
  type DriftOptions,
  medianStepChange,
  MIN_BLOCK_STEPS,
  ulp32,
} from "./lanes/mod.ts";
export {
  type GoldenEvidence,
  judge,
  JUDGE_CODES,
  type Judgement,
  judgeReportFailure,
  judgeVerdicts,
  type MetricsEvidence,
  metricsVerdict,
  planVerdict,
  type RunEvidence,
  VERDICT_RULES,
  type VerdictExit,
  type VerdictRule,
} from "./judge.ts";
export {
  type AssembledEvidence,
  assembleEvidence,
  type PhaseOutcome,
  type RunOutcomes,
} from "./assemble_evidence.ts";
export { scheduleDiagnostics } from "./schedule_bounds.ts";
export {
  cardLines,
  CAUSE_CODES,
  causeLine,
  findRootCauses,
  groupFailures,
  type ResumeKinds,
  type RootCauseInput,
} from "./root_cause.ts";
export { type ComparisonPlan, planComparisons, type ReportsMetric } from "./plan_comparisons.ts";
export { unrequestedTags } from "./state/mod.ts";
export {
  deriveNoiseRtol,
  measureNoiseFloor,
  type NoiseFloorResult,
  type RepeatEvidence,
  SPREAD_LIMIT,
} from "./lanes/mod.ts";
export {
  checkRestoredState,
  findDigestEvent,
  loadedSaveText,
  stateCheckName,
  tensorList,
} from "./state/mod.ts";
export { componentLabel, componentList, masterNotRestored } from "./state/mod.ts";
export { checkAccumulation, checkLrSchedule, checkResumedSteps } from "./preflight.ts";
export {
  isShortDecimal,
  looksRounded,
  MAX_DECIMALS,
  MAX_SIGNIFICANT,
  MIN_VALUES,
} from "./lanes/mod.ts";
export { CONSOLE_WARNINGS, diagnosticVerdict, PARITY_CODES } from "./codes.ts";
export { lossesCsv } from "./losses_csv.ts";
export {
  type CompareFilesOptions,
  compareMetricsFiles,
  type CompareResult,
  formatCompareTable,
} from "./compare_files.ts";
export {
  isFloat32,
  ulpDistance32,
  ulpDistance64,
  ulpDistanceIn,
  type UlpUnit,
  ulpUnitOf,
} from "./lanes/mod.ts";
export { blamedPhases, type Culprit, culprits } from "./culprit.ts";
export {
  comparePlanExecution,
  planExecutionChecks,
  type PlanExecutionFacts,
  type ProcessStateDocument,
} from "./state/mod.ts";
export {
  type GoldenBaseline,
  type GoldenFacts,
  type GoldenHeader,
  judgeAgainstGolden,
} from "./golden_rules.ts";
export {
  bisectExitCode,
  type BisectOutcome,
  judgeRerun,
  releaseCannotRun,
  type ReleaseMark,
  releaseMark,
  type ReproductionOutcome,
  RERUN_EXIT_CODES,
  type RerunVerdict,
} from "./reproduce_rules.ts";
