/**
 * Seeded synthetic token sequences with learnable structure (a sparse Markov chain: each token
 * has three likely successors) and a per-epoch shuffling sampler whose whole state is
 * `(seed, epoch, position)`.
 *
 * @module
 */

import type { ModelConfig } from "./config.ts";
import { epochPermutation, hash5, Purpose, uniform5 } from "./rng.ts";

/** Every sequence of the dataset, `seqLen + 1` tokens each, row-major. */
export interface Dataset {
  /** Tokens, `datasetSize * (seqLen + 1)`. */
  tokens: Int32Array;
  /** Tokens per sequence. */
  stride: number;
}

const SUCCESSOR_PROBS = [0.7, 0.2, 0.1];

/** Generates the dataset of a seed. */
export function makeDataset(seed: number, model: ModelConfig): Dataset {
  const V = model.vocab, stride = model.seqLen + 1;
  const successors: number[][] = [];
  for (let a = 0; a < V; a++) {
    const picks: number[] = [];
    for (let k = 0; picks.length < SUCCESSOR_PROBS.length; k++) {
      const b = hash5(seed, Purpose.data, 1, a, k) % V;
      if (!picks.includes(b)) picks.push(b);
    }
    successors.push(picks);
  }
  const tokens = new Int32Array(model.datasetSize * stride);
  for (let i = 0; i < model.datasetSize; i++) {
    let tok = hash5(seed, Purpose.data, 2, i) % V;
    tokens[i * stride] = tok;
    for (let t = 1; t < stride; t++) {
      const u = uniform5(seed, Purpose.data, 3, i, t);
      let k = 0, acc = SUCCESSOR_PROBS[0];
      while (u >= acc && k < SUCCESSOR_PROBS.length - 1) acc += SUCCESSOR_PROBS[++k];
      tok = successors[tok][k];
      tokens[i * stride + t] = tok;
    }
  }
  return { tokens, stride };
}

/** Logical sampler state: which sample of which epoch comes next. */
export interface SamplerState {
  /** Seed of the per-epoch shuffles. */
  seed: number;
  /** Current epoch (0-based). */
  epoch: number;
  /** Samples of the current epoch already consumed. */
  position: number;
  /** Samples per epoch. */
  datasetSize: number;
}

/** A fresh sampler at the start of epoch 0. */
export function freshSampler(seed: number, datasetSize: number): SamplerState {
  return { seed, epoch: 0, position: 0, datasetSize };
}

/** Draws sample ids in shuffled order, advancing `state` in place. */
export class Sampler {
  #perm: Int32Array | null = null;
  #permEpoch = -1;

  /** Wraps a state object that is updated as samples are drawn. */
  constructor(readonly state: SamplerState) {}

  /** The next sample id. */
  next(): number {
    const s = this.state;
    if (s.position >= s.datasetSize) {
      s.epoch++;
      s.position = 0;
    }
    if (this.#permEpoch !== s.epoch) {
      this.#perm = epochPermutation(s.seed, s.epoch, s.datasetSize);
      this.#permEpoch = s.epoch;
    }
    return this.#perm![s.position++];
  }
}
