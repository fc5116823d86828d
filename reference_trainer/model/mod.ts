/**
 * The reference trainer's simulated model and what trains it: configuration, the counter-based
 * RNG, bf16 rounding, content hashes, the MoE model, data, optimizer, the sharding layout over EP
 * ranks, the training state and the step engine; and the trainer's errors with their exit codes,
 * which every layer of the trainer throws.
 *
 * @module
 */

export { fromBf16Bits, roundToBf16Into, toBf16Bits } from "./bf16.ts";
export { HYPER, MODEL, type ModelConfig, type Topology, type TrainOptions } from "./config.ts";
export { freshSampler, makeDataset, type SamplerState } from "./data.ts";
export { Engine, type UpdateTweak } from "./engine.ts";
export { canonicalJson, hashBytes } from "./hash.ts";
export { buildLayout, epRankOf, type FlatGroup, type Layout, topologyFromJson } from "./layout.ts";
export { PARAM, paramSpecs } from "./model.ts";
export { freshScheduler, lrAt, type SchedulerState } from "./optimizer.ts";
export {
  type CommonState,
  digestState,
  flattenGroup,
  initState,
  type LoadedCheckpoint,
  paramGroupsFromJson,
  paramGroupsJson,
  type ResumeRequest,
  type ShardSet,
  stateFromLoaded,
  type TrainState,
  unflattenGroup,
} from "./state.ts";
export {
  CheckpointError,
  TRAINER_EXIT_CODES,
  TrainerError,
  TrainerExitError,
  UsageError,
} from "./trainer_errors.ts";
