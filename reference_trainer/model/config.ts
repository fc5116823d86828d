/**
 * Fixed model and optimiser settings of the reference trainer, and the run configuration type.
 * The model is deliberately tiny so a 4-rank, 40-step run finishes in well under a second.
 *
 * @module
 */

import type { PlacementDescriptor } from "../../src/affine/mod.ts";

/** Shape of the tiny MoE language model and its data. */
export interface ModelConfig {
  /** Vocabulary size. */
  vocab: number;
  /** Model width. */
  dModel: number;
  /** Expert hidden width. */
  dFF: number;
  /** Number of global experts E. */
  numExperts: number;
  /** Experts chosen per token. */
  topK: number;
  /** Predicted tokens per sequence (sequences hold `seqLen + 1` tokens). */
  seqLen: number;
  /** Sequences in the synthetic dataset (one epoch). */
  datasetSize: number;
  /** Sequences per optimizer step, whatever the world size or accumulation. */
  globalBatch: number;
  /** Dropout probability on the embedded input. */
  dropout: number;
}

/** The model every run uses. */
export const MODEL: Readonly<ModelConfig> = Object.freeze({
  vocab: 32,
  dModel: 16,
  dFF: 32,
  numExperts: 4,
  topK: 2,
  seqLen: 16,
  datasetSize: 96,
  globalBatch: 16,
  dropout: 0.1,
});

/** AdamW, clipping and LR-schedule settings. */
export interface Hyper {
  /** Peak learning rate. */
  baseLr: number;
  /** Floor of the cosine decay. */
  minLr: number;
  /** Linear warm-up length in optimizer steps. */
  warmupSteps: number;
  /** Adam beta1. */
  beta1: number;
  /** Adam beta2. */
  beta2: number;
  /** Adam epsilon. */
  eps: number;
  /** Decoupled weight decay. */
  weightDecay: number;
  /** Global gradient-norm clip. */
  clipNorm: number;
}

/** The optimiser settings every run uses. */
export const HYPER: Readonly<Hyper> = Object.freeze({
  baseLr: 0.02,
  minLr: 0.002,
  warmupSteps: 4,
  beta1: 0.9,
  beta2: 0.99,
  eps: 1e-8,
  weightDecay: 0.01,
  clipNorm: 1.0,
});

/**
 * One optimizer param group as the trainer applies it (DeepSpeed's `param_groups` entry): the
 * parameters it holds by name, so it is the same on every topology, and its hyper-parameters.
 */
export interface ParamGroup {
  /** Parameter names. */
  params: string[];
  /** Factor on the scheduled LR. */
  lrScale: number;
  /** Adam beta1. */
  beta1: number;
  /** Adam beta2. */
  beta2: number;
  /** Adam epsilon. */
  eps: number;
  /** Decoupled weight decay. */
  weightDecay: number;
}

/**
 * The two param groups of a fresh run, split the way DeepSpeed MoE does
 * (`split_params_into_different_moe_groups_for_optimizer`): group 0 the dense parameters, group 1
 * the expert parameters, with the same hyper-parameters. A no-decay group (embeddings, norms)
 * would move every existing run's numerics, which the experiments' expected outcomes pin.
 */
export function freshParamGroups(
  hyper: Readonly<Hyper>,
  specs: readonly { name: string; kind: string }[],
): ParamGroup[] {
  const group = (params: string[]): ParamGroup => ({
    params,
    lrScale: 1,
    beta1: hyper.beta1,
    beta2: hyper.beta2,
    eps: hyper.eps,
    weightDecay: hyper.weightDecay,
  });
  const names = (expert: boolean) =>
    specs.filter((s) => (s.kind === "expert") === expert).map((s) => s.name);
  return [group(names(false)), group(names(true))];
}

/** Weight precision of the module (forward/backward) copy. */
export type Precision = "fp32" | "bf16";

/** Simulated parallel layout. */
export interface Topology {
  /** Data-parallel ranks W. */
  worldSize: number;
  /** Expert-parallel ranks P (divides W); rank r is EP rank `r % P`. */
  epSize: number;
  /** AutoEP placement over the P EP ranks. */
  placement: PlacementDescriptor;
  /** ZeRO stage: 1/2 partition optimizer state, 3 partitions parameters too. */
  zeroStage: 1 | 2 | 3;
  /** Module weight precision. */
  precision: Precision;
}

/** Everything a `train` invocation needs, after flags and PARITY_* variables are merged. */
export interface TrainOptions {
  /** Length of the LR schedule (last step of the full run). */
  steps: number;
  /** Last optimizer step this process runs. */
  stopAt: number;
  /** Seed of data, initialisation, dropout and shuffles. */
  seed: number;
  /** Save after each of these optimizer steps, ascending (empty: no save). */
  saveAt: number[];
  /** Report the state's digests after each of these steps without saving (`snapshot`). */
  digestAt: number[];
  /** Root folder of native checkpoints. */
  checkpointDir: string | null;
  /** Checkpoint to resume from (tag folder, universal folder, or a root with `latest`). */
  resumeFrom: string | null;
  /** How to read `resumeFrom`; null detects native vs universal. */
  resumeKind: string | null;
  /** Plan file for `--resume-kind plan`. */
  plan: string | null;
  /** JSONL metrics file (appended); null writes metrics to stdout. */
  metricsFile: string | null;
  /** Parallel layout. */
  topology: Topology;
  /** Micro-batches per optimizer step. */
  gradAccum: number;
  /** Injected fault name, or null. */
  fault: string | null;
  /** Factor on the LR of a resumed process (a calibration, `--lr-scale-on-resume`; 1 = none). */
  lrScaleOnResume: number;
  /** Print progress lines to stderr. */
  progress: boolean;
  /** Test hook: crash half-way through the save (`PARITY_REFERENCE_CRASH_IN_SAVE=1`). */
  crashInSave?: boolean;
}
