/**
 * The reference trainer: a small, deterministic CPU mixture-of-experts trainer with
 * DeepSpeed-shaped sharded checkpoints, a universal converter and injectable resume faults.
 * The harness reaches it only through its command line (`deno task trainer train|convert`);
 * this module is the programmatic face for tests and for extensions such as a plan executor.
 *
 * Plan sync: `plan` ({@link planFromCheckpoint}, {@link writeVerifiedPlan}) writes a verified
 * transfer plan from a native checkpoint to a target topology; `--resume-kind plan`
 * ({@link loadThroughPlan}) executes one.
 *
 * Extension points:
 * - {@link COMMANDS} (cli.ts): add a subcommand.
 * - {@link registerResumeLoader} (resume.ts): add a `--resume-kind`. A loader gets
 *   the checkpoint path, the target {@link Layout} and `--plan`, and returns the target
 *   topology's per-EP-rank shards as a {@link LoadedCheckpoint}. {@link readNative} gives the
 *   source shards of a native checkpoint in the same representation.
 *
 * @module
 */

export { COMMANDS, main } from "./cli.ts";
export type { CliIo, Command } from "./cli.ts";
export {
  HYPER,
  type Hyper,
  MODEL,
  type ModelConfig,
  type Topology,
  type TrainOptions,
} from "./config.ts";
export { CheckpointError, TrainerError, UsageError } from "./trainer_errors.ts";
export { FAULT_NAMES, type FaultInfo, FAULTS, type FaultSite } from "./faults.ts";
export {
  buildLayout,
  edpRanks,
  epRankOf,
  type FlatGroup,
  type GroupEntry,
  type Layout,
  paramMap,
  TOPOLOGY_JSON_KEYS,
  topologyFromJson,
  type TopologyJsonOptions,
  validateTopology,
} from "./layout.ts";
export { PARAM, type ParamKind, type ParamSpec, paramSpecs } from "./model.ts";
export {
  type GroupMeta,
  loadNative,
  type NativeCheckpoint,
  type NativeMeta,
  type NativeMetadata,
  readNative,
  readNativeMetadata,
  saveNative,
  type SaveOptions,
} from "./checkpoint.ts";
export {
  type ConvertOptions,
  convertToUniversal,
  loadUniversal,
  readUniversal,
  type UniversalCheckpoint,
} from "./universal.ts";
export {
  registerResumeLoader,
  resumeKinds,
  type ResumeLoader,
  resumeLoader,
  type ResumeRequest,
} from "./resume.ts";
export {
  type CommonState,
  type LoadedCheckpoint,
  type ParamState,
  type RngState,
  type ShardSet,
  stateDigests,
  type TrainState,
} from "./state.ts";
export { runTrain, type TrainIo } from "./trainer.ts";
export {
  type CheckpointPlanOptions,
  epRankProcesses,
  PLAN_ELEMENT_SIZE,
  PLAN_FLAGS,
  planFromCheckpoint,
  readTargetTopology,
  replicaPolicyByName,
  runPlan,
  writeVerifiedPlan,
} from "./resharding_plan.ts";
export { checkPlanMaps, loadThroughPlan, type PlanSide, readPlanForResume } from "./plan_resume.ts";
export {
  decodeSafetensors,
  type Dtype,
  encodeSafetensors,
  readSafetensorsFile,
  type SafetensorsFile,
  type Tensor,
  type TensorData,
} from "./safetensors.ts";
