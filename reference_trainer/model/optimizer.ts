/**
 * AdamW with bias correction and decoupled weight decay (PyTorch's formula, in float32 storage),
 * global-norm gradient clipping, and a stateful LR scheduler: linear warm-up, then cosine decay
 * over the full `--steps`.
 *
 * @module
 */

import type { Hyper } from "./config.ts";

/** LR scheduler state; `lastStep` is the number of optimizer steps already taken. */
export interface SchedulerState {
  /** Optimizer steps already scheduled. */
  lastStep: number;
  /** Peak learning rate. */
  baseLr: number;
  /** Floor of the cosine decay. */
  minLr: number;
  /** Warm-up steps. */
  warmupSteps: number;
  /** Schedule length (the full run's `--steps`). */
  totalSteps: number;
}

/** A scheduler at step 0 for a schedule of `totalSteps`. */
export function freshScheduler(hyper: Hyper, totalSteps: number): SchedulerState {
  return {
    lastStep: 0,
    baseLr: hyper.baseLr,
    minLr: hyper.minLr,
    warmupSteps: hyper.warmupSteps,
    totalSteps,
  };
}

/** Learning rate of 1-based optimizer step `step`. */
export function lrAt(s: SchedulerState, step: number): number {
  if (step <= s.warmupSteps) return (s.baseLr * step) / s.warmupSteps;
  const span = Math.max(1, s.totalSteps - s.warmupSteps);
  const progress = Math.min(1, (step - s.warmupSteps) / span);
  return s.minLr + 0.5 * (s.baseLr - s.minLr) * (1 + Math.cos(Math.PI * progress));
}

/** Advances the scheduler and returns the LR of the step being taken. */
export function schedulerStep(s: SchedulerState): number {
  s.lastStep += 1;
  return lrAt(s, s.lastStep);
}

/**
 * One AdamW update in place: `t` is the 1-based Adam step (bias correction), values are stored
 * rounded to float32 as a fp32 master copy would be.
 */
export function adamwUpdate(
  param: Float32Array,
  grad: Float32Array,
  expAvg: Float32Array,
  expAvgSq: Float32Array,
  lr: number,
  t: number,
  h: Hyper,
): void {
  const bc1 = 1 - Math.pow(h.beta1, t);
  const bc2Sqrt = Math.sqrt(1 - Math.pow(h.beta2, t));
  const stepSize = lr / bc1;
  const decay = 1 - lr * h.weightDecay;
  for (let i = 0; i < param.length; i++) {
    const g = grad[i];
    expAvg[i] = h.beta1 * expAvg[i] + (1 - h.beta1) * g;
    expAvgSq[i] = h.beta2 * expAvgSq[i] + (1 - h.beta2) * g * g;
    const denom = Math.sqrt(expAvgSq[i]) / bc2Sqrt + h.eps;
    param[i] = Math.fround(param[i] * decay) - stepSize * (expAvg[i] / denom);
  }
}
