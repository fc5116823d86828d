/**
 * Reproduction on top of the pipeline: `rerun` replays a run folder and judges it REPRODUCED or
 * DRIFTED, `golden save` files a baseline per environment, `bisect` finds the commit of a code
 * input that broke parity.
 *
 * @module
 */

export {
  bisect,
  type BisectOptions,
  type BisectResult,
  BisectUsageError,
  formatBisect,
} from "./bisect.ts";
export { type SavedGolden, saveGolden } from "./golden_save.ts";
export { formatRerun, RERUN_EXIT_CODES, type RerunResult, rerunRun } from "./rerun.ts";
export { readStoredRun, type StoredRun, StoredRunError } from "./stored_run.ts";
export {
  bisectPackage,
  formatPackageBisect,
  type PackageBisectResult,
  PackageBisectUsageError,
} from "./package_bisect.ts";
