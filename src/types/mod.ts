/**
 * Shapes every layer shares: the resolved plan (`PhaseSpec`, `ResolvedPlan`), summary.json, the
 * judge and chart settings, every default (`defaults.ts`), the exit-code table, the one error base
 * `HarnessError` and the environment errors beside it. The bottom layer: it imports nothing of the
 * harness.
 *
 * @module
 */

export { checkpointFolder, isUniversalFolder, universalFolder } from "./checkpoint_folder.ts";
export {
  AUTO_TOLERANCE_DEFAULTS,
  CHART_DEFAULTS,
  DEFAULT_ELEMENT_SIZE,
  DEFAULT_GOLDENS_DIR,
  DEFAULT_METRIC,
  DEFAULT_METRICS_FORMAT,
  DEFAULT_PHASE_TIMEOUT_S,
  DRIFT_DEFAULTS,
  NOISE_RTOL_RULE,
  TOLERANCE_DEFAULTS,
} from "./defaults.ts";
export { asHarnessError, describeEnvironmentError } from "./environment_error.ts";
export { EXIT_CODES, type ExitCode } from "./exit_codes.ts";
export { HarnessError, UsageError } from "./harness_error.ts";
export { type Lane, LANES, type ToleranceSpec } from "./judge_settings.ts";
export {
  type Calibration,
  CHECKPOINT_FILES_DOCUMENT,
  type CompareSpec,
  type DevicePoolSpec,
  type DriftSpec,
  type ExecutorSpec,
  type JudgeSpec,
  type LaneChoice,
  type LocalExecutorSpec,
  type MetricsFormat,
  type MetricsSpec,
  type PhasePaths,
  type PhaseSpec,
  type PhaseTool,
  placePlan,
  PLAN_FILE,
  type ResolvedPlan,
  type ResumeKind,
  RUN_FOLDER,
  savesCheckpoint,
  type SlurmExecutorSpec,
} from "./phase_spec.ts";
export { readSummary } from "./read_summary.ts";
export {
  type BillSaving,
  type CalibrationResult,
  type ComparisonSummary,
  type Diagnostic,
  type DriftFailure,
  type DriftSummary,
  type Finding,
  type GoldenSummary,
  type JudgeSettings,
  type LoadedSave,
  type LossAliasFinding,
  type NoiseFloorSummary,
  type NoiseRtolDerivation,
  type PhaseDevices,
  type PhaseRole,
  type PhaseStatus,
  type PhaseSummary,
  type PlanExecution,
  type PlannerRecord,
  type PlanSyncSummary,
  type RunBill,
  type RunSummary,
  type SecondOpinion,
  type SensitivitySummary,
  type SlotMismatch,
  type StateCheckSummary,
  type Verdict,
  VERDICT_RANK,
} from "./summary.ts";
