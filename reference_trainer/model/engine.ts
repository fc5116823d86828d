/**
 * One optimizer step on W simulated data-parallel ranks: each micro-batch of the fixed global
 * batch is split over the ranks, every rank accumulates its own fp32 gradients, and at the
 * accumulation boundary gradients are reduced in rank order, clipped by global norm and applied
 * by AdamW to every EP rank's shard (so replicas of an expert get identical updates).
 *
 * @module
 */

import { evenSizes, extract, rebuild } from "../../src/affine/mod.ts";
import { HYPER, type Hyper, type ParamGroup } from "./config.ts";
import { type Dataset, Sampler } from "./data.ts";
import type { Layout } from "./layout.ts";
import { type ComputeWeights, gradOf, type Grads, Kernel, PARAM, zeroGrads } from "./model.ts";
import { Hasher64 } from "./hash.ts";
import { adamwUpdate, schedulerStep } from "./optimizer.ts";
import { refreshModule, type TrainState } from "./state.ts";

/** The record logged for one optimizer step. */
export interface StepRecord {
  /** 1-based optimizer step. */
  step: number;
  /** Global-batch mean loss of this step's forward passes (before its update). */
  loss: number;
  /** Learning rate used by this step's update. */
  lr: number;
  /** Global gradient norm before clipping. */
  grad_norm: number;
}

/**
 * How a (faulty) resumed process departs from the optimiser settings of its param groups:
 * `lrScale` multiplies the applied LR (the logged schedule stays right), `noWeightDecay` drops
 * every group's weight decay. Neither touches the state, so no digest shows them.
 */
export interface UpdateTweak {
  /** Factor on the LR applied by each update (1 when absent). */
  lrScale?: number;
  /**
   * A calibration's known LR error (`--lr-scale-on-resume`): a factor on the LR that is applied
   * and logged, so the harness can see it took effect (1 when absent).
   */
  lrCalibration?: number;
  /** Apply no weight decay, whatever the groups say. */
  noWeightDecay?: boolean;
  /**
   * Leave the gradient buffers as they are after an update (`carry-grads`, a training-loop bug
   * every process has): each step adds onto what the earlier ones left.
   */
  keepGrads?: boolean;
}

/** Drives micro-batches and optimizer steps over a {@link TrainState}. */
export class Engine {
  /** Micro-batches accumulated towards the current optimizer step. */
  pending = 0;
  readonly #state: TrainState;
  readonly #layout: Layout;
  readonly #data: Dataset;
  readonly #gradAccum: number;
  readonly #kernel: Kernel;
  readonly #grads: Grads[];
  readonly #loss: Float32Array;
  readonly #sampler: Sampler;
  readonly #tweak: UpdateTweak;
  #weights: ComputeWeights;

  /** Wraps a state; `gradAccum` micro-batches make one optimizer step. */
  constructor(state: TrainState, data: Dataset, gradAccum: number, tweak: UpdateTweak = {}) {
    this.#state = state;
    this.#tweak = tweak;
    this.#layout = state.layout;
    this.#data = data;
    this.#gradAccum = gradAccum;
    this.#kernel = new Kernel(state.layout.model);
    this.#grads = Array.from(
      { length: state.layout.topology.worldSize },
      () => zeroGrads(state.layout.model),
    );
    this.#loss = new Float32Array(state.layout.topology.worldSize);
    this.#sampler = new Sampler(state.common.sampler);
    this.#weights = this.#computeWeights();
  }

  #computeWeights(): ComputeWeights {
    const { params, layout } = this.#state;
    const mod = (name: string) => params.get(name)!.module;
    const headShards = new Map<number, Float32Array>();
    mod(PARAM.head).forEach((s, p) => headShards.set(p, s));
    return {
      embed: mod(PARAM.embed),
      router: mod(PARAM.router),
      w1: mod(PARAM.w1),
      w2: mod(PARAM.w2),
      w3: mod(PARAM.w3),
      head: rebuild(layout.maps.get(PARAM.head)!, headShards),
      slots: layout.slots,
      holders: layout.holders,
    };
  }

  /** Consumes one micro-batch: draws its samples, advances the RNG counter, accumulates. */
  runMicro(): void {
    const { model, topology } = this.#layout;
    const common = this.#state.common;
    const micro = model.globalBatch / this.#gradAccum;
    const ids: number[] = [];
    for (let i = 0; i < micro; i++) ids.push(this.#sampler.next());
    const drop = { seed: common.rng.seed, offset: common.rng.offset };
    const scale = 1 / (model.globalBatch * model.seqLen);
    const sizes = evenSizes(micro, topology.worldSize);
    let slot = 0;
    for (let r = 0; r < topology.worldSize; r++) {
      const p = r % topology.epSize;
      for (let i = 0; i < sizes[r]; i++, slot++) {
        const at = ids[slot] * this.#data.stride;
        const l = this.#kernel.sequence(
          this.#weights,
          p,
          this.#grads[r],
          this.#data.tokens,
          at,
          drop,
          slot,
          scale,
        );
        this.#loss[r] = this.#loss[r] + l;
      }
    }
    common.rng.offset += 1;
    common.microStep += 1;
    common.samples += micro;
    this.pending += 1;
  }

  /**
   * The `grad_buffers` digest of what the next micro-batch accumulates onto: per parameter, the
   * rank-order sum of every rank's buffer, an all-zero one hashed as a marker (so a fresh engine
   * on any topology digests alike), and one `<param> · grad` entry each.
   */
  gradBuffers(): { digests: Record<string, string>; tensors: Record<string, string> } {
    const all = new Hasher64();
    const tensors: Record<string, string> = {};
    for (const spec of this.#layout.specs) {
      const sum = new Float32Array(gradOf(this.#grads[0], spec.name));
      for (let r = 1; r < this.#grads.length; r++) {
        const add = gradOf(this.#grads[r], spec.name);
        for (let i = 0; i < sum.length; i++) sum[i] += add[i];
      }
      const zero = sum.every((x) => x === 0);
      for (const h of [all, new Hasher64()]) {
        h.updateString(spec.name);
        if (zero) h.updateString("<zero>");
        else h.updateArray(sum);
        if (h !== all) tensors[`${spec.name} · grad`] = h.digest();
      }
    }
    return { digests: { grad_buffers: all.digest() }, tensors };
  }

  /** The AdamW settings of a param group, as this process applies them. */
  #hyperOf(group: ParamGroup): Hyper {
    return {
      ...HYPER,
      beta1: group.beta1,
      beta2: group.beta2,
      eps: group.eps,
      weightDecay: this.#tweak.noWeightDecay ? 0 : group.weightDecay,
    };
  }

  /** Reduces, clips and applies the accumulated gradients; returns the step's record. */
  finishStep(): StepRecord {
    const { model, specs, maps } = this.#layout;
    const state = this.#state;
    const W = this.#grads.length;
    // Fixed-order reduction: rank 0 + rank 1 + ... in float32.
    const total = this.#grads[0];
    for (let r = 1; r < W; r++) {
      for (const spec of specs) {
        const acc = gradOf(total, spec.name), add = gradOf(this.#grads[r], spec.name);
        for (let i = 0; i < acc.length; i++) acc[i] += add[i];
      }
    }
    let lossSum = 0;
    for (let r = 0; r < W; r++) lossSum = Math.fround(lossSum + this.#loss[r]);
    const loss = Math.fround(lossSum / (model.globalBatch * model.seqLen));
    let sq = 0;
    for (const spec of specs) {
      const g = gradOf(total, spec.name);
      for (let i = 0; i < g.length; i++) sq += g[i] * g[i];
    }
    const norm = Math.sqrt(sq);
    const coef = HYPER.clipNorm / (norm + 1e-6);
    if (coef < 1) {
      for (const spec of specs) {
        const g = gradOf(total, spec.name);
        for (let i = 0; i < g.length; i++) g[i] *= coef;
      }
    }
    const lr = schedulerStep(state.common.scheduler) * (this.#tweak.lrCalibration ?? 1);
    state.common.optimizerStep += 1;
    const t = state.common.optimizerStep;
    for (const spec of specs) {
      const group = state.common.paramGroups.find((g) => g.params.includes(spec.name));
      if (group === undefined) throw new Error(`${spec.name} is in no param group`);
      const applied = lr * group.lrScale * (this.#tweak.lrScale ?? 1);
      const hyper = this.#hyperOf(group);
      const ps = state.params.get(spec.name)!;
      const map = maps.get(spec.name)!;
      const full = gradOf(total, spec.name);
      for (let p = 0; p < ps.fp32.length; p++) {
        if (ps.fp32[p].length === 0) continue;
        const g = spec.kind === "dense" ? full : extract(map, full, p);
        adamwUpdate(ps.fp32[p], g, ps.expAvg[p], ps.expAvgSq[p], applied, t, hyper);
      }
      refreshModule(this.#layout, ps);
    }
    this.#weights = this.#computeWeights();
    if (!this.#tweak.keepGrads) {
      for (const g of this.#grads) for (const spec of specs) gradOf(g, spec.name).fill(0);
    }
    this.#loss.fill(0);
    this.pending = 0;
    state.common.globalStep += 1;
    return { step: state.common.globalStep, loss, lr, grad_norm: norm };
  }
}
