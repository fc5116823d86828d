/**
 * Running an experiment: the runner, scheduling (launch order, device pool, launch gate), phase
 * execution with retries and Slurm re-attachment, the run's progress interface, `parity plan`'s
 * preview and bill, and the evidence the runner gathers (goldens, schedule bounds, plan checks).
 *
 * @module
 */

export {
  flatEnvironment,
  type GoldenHeader,
  goldenPath,
  goldenText,
  writeGolden,
} from "./golden.ts";
export { formatPlanPreview, type PlanPreview, previewPlan } from "./plan_preview.ts";
export { type Follower, type Progress, type RunCard } from "./run_progress.ts";
export { runExperiment, type RunResult, shownPath } from "./runner.ts";
