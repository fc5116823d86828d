/**
 * The results store: the results folder's layout (`<results>/<experiment>/<run-id>/`, `latest`,
 * atomic JSON), the phase cache and its keys, the run lock, gc, `manifest.json` and the
 * environment facts, output and checkpoint hashes, the pre-flight check of the results folder and
 * the redacted experiment a run writes.
 *
 * @module
 */

export {
  checkpointRoots,
  completedOutputs,
  missingArtifact,
  phaseOutputs,
  requiredArtifacts,
} from "./artifacts.ts";
export {
  type CacheHit,
  cacheKeyEnv,
  CHILD_PID_FILE,
  type CodeDigests,
  computeKeys,
  findCachedPhase,
  findFailedPhase,
  type KeyLeftOut,
  quarantineIncomplete,
} from "./cache.ts";
export {
  type CheckpointVerifyMode,
  FULL_VERIFY_LIMIT_GIB,
  hashCheckpoints,
  warmCheckpointHasher,
} from "./checkpoint_hashes.ts";
export {
  codeInputDir,
  collectEnvironment,
  type EnvironmentFacts,
  environmentKey,
} from "./environment.ts";
export {
  collectGarbage,
  formatGcReport,
  type GcReport,
  pruneOlderRuns,
  pruneRunCheckpoints,
} from "./gc.ts";
export { acquireRunLock } from "./lock.ts";
export {
  type ClusterRecord,
  gitState,
  HARNESS_VERSION,
  type Manifest,
  newManifest,
  recordChild,
} from "./manifest.ts";
export { hashPhaseOutputs, notReused } from "./output_hashes.ts";
export { checkResultsFolder } from "./results_folder.ts";
export { learnRunSecrets, redactedExperiment, redactedPlan } from "./run_secrets.ts";
export {
  assertInside,
  ATTEMPT_DIR_PATTERN,
  experimentFolderName,
  latestRunDir,
  listRuns,
  listSuiteRuns,
  newRunId,
  pathExists,
  updateLatest,
  writeJsonAtomic,
  writeJsonInTurn,
} from "./run_store.ts";
export { sha256Hex } from "./sha256.ts";
export { removeStrayTemporaries } from "./stray_temporaries.ts";
export { runArtifactProblems } from "./verify_run.ts";
