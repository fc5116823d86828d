/**
 * The **drift** lane: the default judge of a resume on another topology. A reshard changes the
 * reduction order, so its loss leaves the baseline's by a few ULPs and the difference then grows
 * chaotically until it saturates; a fixed rtol fails every realistic run length. The lane tells
 * that drift from a bug with three tests over the window (docs/parity.md, "The drift lane"):
 *
 * 1. **Early window** (the first {@link DriftOptions.earlySteps} steps): every `|b - a|`
 *    within {@link DriftOptions.earlyUlp} float32 ULPs of `a`. A correct reshard starts at ULP
 *    level; lost or corrupted state shows at N+1 or N+2 by orders of magnitude.
 * 2. **Envelope** (the rest): `|b - a|` within the loss's own step-to-step noise (the median
 *    `|a[k] - a[k-1]|` over the window, times {@link DriftOptions.envelopeFactor}): drift
 *    saturates below it, a broken run does not.
 * 3. **Bias**: the mean of `b - a` over {@link DriftOptions.blocks} blocks of the long window
 *    must stay at zero (|t| of the block means within {@link DriftOptions.biasT}). Chaos
 *    averages out; a slightly wrong LR or a lost weight decay pushes one way.
 *
 * Missing steps and one-sided NaN fail as in every lane.
 *
 * @module
 */

import { DEFAULT_METRIC, type DriftFailure, type DriftSummary } from "../../types/mod.ts";
import { ulps } from "../../format/mod.ts";
import type { MetricSeries } from "../../metrics/mod.ts";
import { compareLane, type LaneResult, type StepRange } from "./lanes.ts";
import { sortedHas } from "./_sorted.ts";
import { twoSidedQuantile, twoSidedTail } from "./_student_t.ts";

/** Thresholds of the drift lane (measured on the reference trainer, docs/parity.md). */
export interface DriftOptions {
  /** Steps after the save judged tightly. */
  earlySteps: number;
  /** Allowed `|b - a|` in the early window, in float32 ULPs of `a`. */
  earlyUlp: number;
  /** Allowed `|b - a|` later, as a multiple of the median step-to-step change of `a`. */
  envelopeFactor: number;
  /** Blocks the long window is cut into for the bias test. */
  blocks: number;
  /**
   * Fewest steps per block ({@link MIN_BLOCK_STEPS}) of the full bias test; a shorter long
   * window is cut into shorter blocks at a raised |t| limit ({@link biasBlocks}).
   */
  minBlockSteps: number;
  /** Largest |t| of the block means of `b - a` that still counts as zero mean. */
  biasT: number;
  /**
   * Extra relative allowance of the early window and the bias floor (`|b - a| <= earlyRel·|a|`
   * also passes): a measured noise floor, so a nondeterministic trainer's noise is not a bug.
   */
  earlyRel: number;
  /**
   * Extra absolute allowance of the early window and the bias floor: the rounding step of
   * rounded metrics (0 when absent), so the early bound judges only what the values can show.
   */
  earlyAbs?: number;
}

/**
 * Fewest steps per bias-test block: a property of the test, not an experiment setting. The
 * settings' defaults live in `src/types/defaults.ts`.
 */
export const MIN_BLOCK_STEPS = 10;

/** Spacing of float32 values at `|x|` (one float32 ULP). */
export function ulp32(x: number): number {
  const ax = Math.abs(x);
  if (!(ax > 0) || !Number.isFinite(ax)) return Math.pow(2, -149);
  const e = Math.max(Math.floor(Math.log2(ax)), -126);
  // log2 can round across a power of two; correct by one.
  const exp = Math.pow(2, e) > ax ? e - 1 : Math.pow(2, e + 1) <= ax ? e + 1 : e;
  return Math.pow(2, exp - 23);
}

/** The aligned steps of a drift comparison and the two sides' values. */
interface Aligned {
  steps: number[];
  xs: number[];
  ys: number[];
}

/** The early window: within `earlyUlp` float32 ULPs of `a`, or within the noise it allows. */
function testEarlyWindow(d: Aligned, early: number, o: DriftOptions, metric: string) {
  const { steps, xs, ys } = d;
  let max = 0;
  let index = -1;
  let failure: DriftFailure | undefined;
  for (let i = 0; i < early; i++) {
    const u = Math.abs(ys[i] - xs[i]) / ulp32(xs[i]);
    if (u > max) max = u;
    const noiseAllows = Math.abs(ys[i] - xs[i]) <= o.earlyRel * Math.abs(xs[i]) + (o.earlyAbs ?? 0);
    if (u > o.earlyUlp && !noiseAllows && index < 0) {
      index = i;
      failure = {
        test: "early",
        metric,
        step: steps[i],
        measured: u,
        bound: o.earlyUlp,
        abs_diff: Math.abs(ys[i] - xs[i]),
      };
    }
  }
  return { max, index, failure };
}

/** After the early window: |b − a| within `envelopeFactor` × the median step-to-step change. */
function testEnvelope(
  d: Aligned,
  early: number,
  noise: number,
  o: DriftOptions,
  metric: string,
) {
  const { steps, xs, ys } = d;
  let max = 0;
  let index = -1;
  let failure: DriftFailure | undefined;
  for (let i = early; i < steps.length; i++) {
    const ratio = noise > 0 ? Math.abs(ys[i] - xs[i]) / noise : ys[i] === xs[i] ? 0 : Infinity;
    if (ratio > max) max = ratio;
    if (ratio > o.envelopeFactor && index < 0) {
      index = i;
      failure = {
        test: "envelope",
        metric,
        step: steps[i],
        measured: Math.abs(ys[i] - xs[i]),
        bound: o.envelopeFactor * noise,
        abs_diff: Math.abs(ys[i] - xs[i]),
        envelope_factor: o.envelopeFactor,
      };
    }
  }
  return { max, index, failure };
}

/** Runs the drift lane on one metric of two series. */
export function compareDrift(
  a: MetricSeries,
  b: MetricSeries,
  options: {
    metric?: string;
    window: Float64Array | StepRange;
    names?: [string, string];
    drift: DriftOptions;
  },
): LaneResult {
  const o = options.drift;
  const metric = options.metric ?? DEFAULT_METRIC;
  const base = compareLane(a, b, {
    lane: "exact",
    metric,
    window: options.window,
    names: options.names,
  });
  const result: LaneResult = { ...base, lane: "drift" };
  // Missing, one-sided NaN and empty windows are judged as in every lane.
  if (base.verdict === "ERROR" || (base.missing_steps ?? 0) > 0 || (base.non_finite ?? 0) > 0) {
    return result;
  }
  const [nameA, nameB] = options.names ?? ["a", "b"];
  const { steps, xs, ys } = aligned(a, b, metric, options.window);
  const n = steps.length;
  const early = Math.min(o.earlySteps, n);
  const noise = medianStepChange(xs);
  const envelope = o.envelopeFactor * noise;

  const earlyTest = testEarlyWindow({ steps, xs, ys }, early, o, metric);
  const earlyMax = earlyTest.max;
  const envelopeTest = testEnvelope({ steps, xs, ys }, early, noise, o, metric);
  const maxRatio = envelopeTest.max;
  let firstStep: number | null = null;
  let { index: firstIndex, failure } = earlyTest.index >= 0 ? earlyTest : envelopeTest;
  const bias = biasTest(steps, xs, ys, early, o);
  if (bias.failsAt !== null && firstIndex < 0) {
    firstIndex = steps.indexOf(bias.failsAt);
    failure = {
      test: "bias",
      metric,
      step: bias.failsAt,
      measured: bias.mean,
      bound: bias.limit,
      t: bias.t,
      blocks: bias.blocks,
      from: steps[early],
      to: steps[n - 1],
    };
  }
  if (firstIndex >= 0) firstStep = steps[firstIndex];

  const summary: DriftSummary = {
    early_steps: early,
    early_limit_ulp32: o.earlyUlp,
    early_max_ulp32: Math.round(earlyMax * 10) / 10,
    envelope,
    envelope_factor: o.envelopeFactor,
    max_envelope_ratio: maxRatio,
    bias_mean: bias.mean,
    bias_t: bias.t,
    bias_limit: bias.limit,
    bias_blocks: bias.blocks,
  };
  if (failure !== undefined) summary.failure = failure;
  result.drift = summary;
  const span = `steps ${base.first_step}..${base.last_step}`;
  result.failures = firstIndex >= 0 ? 1 : 0;
  if (firstStep === null) {
    result.verdict = "PASS";
    result.first_divergent_step = null;
    result.last_matching_step = base.last_step;
    result.divergence = null;
    const biasText = bias.blocks > 0
      ? `mean b-a ${bias.mean} (t = ${bias.t.toFixed(1)})`
      : `bias test skipped (the long window is under ${
        MIN_SHORT_BLOCKS * SHORT_BLOCK_STEPS
      } steps)`;
    result.reason = `${metric} drifts like reduction-order noise over ${n} steps (${span}): ` +
      `early window within ${o.earlyUlp} float32 ULPs (max ${summary.early_max_ulp32}), ` +
      `later |b-a| at most ${fmt(maxRatio)} × the step-to-step change of ${nameA}, ${biasText}.`;
  } else {
    result.verdict = "FAIL";
    result.first_divergent_step = firstStep;
    result.last_matching_step = firstIndex > 0 ? steps[firstIndex - 1] : null;
    result.divergence = { step: firstStep, a: xs[firstIndex], b: ys[firstIndex] };
    result.reason = `${metric} is not reduction-order drift: ${
      driftFailureText(failure!, [nameA, nameB])
    }.`;
  }
  return result;
}

/**
 * The broken test in words, e.g. `|b-a| = 0.002 is 1200 ULP (f32) at step 21, in the early
 * window ...`; `names` are the two sides. For display only: code reads {@link DriftFailure}.
 */
export function driftFailureText(failure: DriftFailure, names: [string, string]): string {
  const [nameA, nameB] = names;
  switch (failure.test) {
    case "early":
      return `|b-a| = ${failure.abs_diff} is ${
        ulps(Math.round(failure.measured), "f32")
      } at step ${failure.step}, in the early window where a correct reshard stays within ${
        ulps(failure.bound, "f32")
      }`;
    case "envelope":
      return `|b-a| = ${failure.abs_diff} at step ${failure.step} exceeds the drift envelope ${failure.bound} (${failure.envelope_factor} × the median step-to-step change of ${nameA})`;
    case "bias":
      return `${nameB} - ${nameA} has a persistent bias: mean ${failure.measured} over steps ${failure.from}..${failure.to} (t = ${
        (failure.t ?? 0).toFixed(1)
      } over ${failure.blocks} blocks, limit ${failure.bound}); reduction-order drift averages to zero, a wrong LR or a lost weight decay does not`;
  }
}

function fmt(x: number): string {
  return Number.isFinite(x) ? x.toPrecision(2) : String(x);
}

/** Window steps with both values, as parallel arrays (missing steps were already judged). */
function aligned(
  a: MetricSeries,
  b: MetricSeries,
  metric: string,
  window: Float64Array | StepRange,
): { steps: number[]; xs: number[]; ys: number[] } {
  const inWindow = window instanceof Float64Array
    ? (s: number) => sortedHas(window, s)
    : (s: number) => s >= window.from && s <= window.to;
  const byStep = new Map<number, number>();
  const va = a.values[metric];
  for (let i = 0; i < a.steps.length; i++) {
    if (a.present[metric][i] === 1 && inWindow(a.steps[i])) byStep.set(a.steps[i], va[i]);
  }
  const steps: number[] = [];
  const xs: number[] = [];
  const ys: number[] = [];
  const vb = b.values[metric];
  for (let i = 0; i < b.steps.length; i++) {
    const x = byStep.get(b.steps[i]);
    if (x === undefined || b.present[metric][i] !== 1) continue;
    steps.push(b.steps[i]);
    xs.push(x);
    ys.push(vb[i]);
  }
  return { steps, xs, ys };
}

/** Median of |x[k] - x[k-1]|: the loss's own step-to-step noise, the scale drift saturates under. */
export function medianStepChange(xs: number[]): number {
  if (xs.length < 2) return 0;
  const d = xs.slice(1).map((x, i) => Math.abs(x - xs[i])).sort((p, q) => p - q);
  const mid = d.length >> 1;
  return d.length % 2 === 1 ? d[mid] : (d[mid - 1] + d[mid]) / 2;
}

/**
 * Block-mean t test of `b - a` over the long window. Block means absorb the autocorrelation of
 * the drift; a bias must also exceed {@link BIAS_FLOOR_ULP} float32 ULPs of the loss (ULP-level
 * means are no evidence), widened by a measured noise floor or rounding step. A long
 * window under `blocks × minBlockSteps` steps is cut into shorter blocks (at least
 * {@link SHORT_BLOCK_STEPS} steps, at least {@link MIN_SHORT_BLOCKS} of them), and the |t| limit
 * is raised to keep the configured limit's false-alarm probability at the fewer degrees of
 * freedom; shorter windows skip the test.
 */
function biasTest(
  steps: number[],
  xs: number[],
  ys: number[],
  from: number,
  o: DriftOptions,
): { mean: number; t: number; blocks: number; limit: number; failsAt: number | null } {
  const n = xs.length - from;
  const { blocks, limit } = biasBlocks(n, o);
  if (blocks === 0) {
    return { mean: mean(ys, xs, from, xs.length), t: 0, blocks: 0, limit, failsAt: null };
  }
  const means: number[] = [];
  const starts: number[] = [];
  for (let k = 0; k < blocks; k++) {
    const lo = from + Math.floor((k * n) / blocks);
    const hi = from + Math.floor(((k + 1) * n) / blocks);
    means.push(mean(ys, xs, lo, hi));
    starts.push(lo);
  }
  const m = means.reduce((s, x) => s + x, 0) / means.length;
  const variance = means.reduce((s, x) => s + (x - m) * (x - m), 0) / (means.length - 1);
  const se = Math.sqrt(variance / means.length);
  const t = se > 0 ? m / se : m === 0 ? 0 : Math.sign(m) * Infinity;
  let scale = 0;
  for (let i = from; i < xs.length; i++) scale += Math.abs(xs[i]);
  const floor = Math.max(
    BIAS_FLOOR_ULP * ulp32(scale / n),
    o.earlyRel * (scale / n) + (o.earlyAbs ?? 0),
  );
  let failsAt: number | null = null;
  if (Math.abs(t) > limit && Math.abs(m) > floor) {
    // The first block pushing the way the whole window does, by at least half the mean.
    const k = means.findIndex((x) =>
      Math.sign(x) === Math.sign(m) && Math.abs(x) >= Math.abs(m) / 2
    );
    failsAt = steps[starts[Math.max(0, k)]];
  }
  return { mean: m, t, blocks, limit, failsAt };
}

/**
 * Smallest mean `b - a`, in float32 ULPs of the loss, that can be a bias. Fixed, not the early
 * window's bound: widening `early_ulp` for a reshard that starts further apart (bf16) must not
 * blind the bias test, whose own |t| limit already tells drift from a push.
 */
export const BIAS_FLOOR_ULP = 16;

/** Fewest steps per block of a short long window's bias test. */
const SHORT_BLOCK_STEPS = 4;
/** Fewest blocks of a short long window's bias test (4 degrees of freedom). */
const MIN_SHORT_BLOCKS = 5;

/**
 * How many blocks the bias test cuts a long window of `n` steps into, and the |t| limit there:
 * `o.blocks` and `o.biasT` when every block has `o.minBlockSteps` steps; else as many blocks of
 * {@link SHORT_BLOCK_STEPS} as fit (at most `o.blocks`, at least {@link MIN_SHORT_BLOCKS}), with
 * the limit that has the same two-sided tail probability at their degrees of freedom; 0 blocks
 * (skipped) below that.
 */
export function biasBlocks(n: number, o: DriftOptions): { blocks: number; limit: number } {
  if (n >= o.blocks * o.minBlockSteps) return { blocks: o.blocks, limit: o.biasT };
  const blocks = Math.min(o.blocks, Math.floor(n / SHORT_BLOCK_STEPS));
  if (blocks < MIN_SHORT_BLOCKS) return { blocks: 0, limit: o.biasT };
  if (blocks === o.blocks) return { blocks, limit: o.biasT };
  const tail = twoSidedTail(o.biasT, o.blocks - 1);
  return { blocks, limit: twoSidedQuantile(tail, blocks - 1) };
}

function mean(ys: number[], xs: number[], lo: number, hi: number): number {
  if (hi <= lo) return 0;
  let s = 0;
  for (let i = lo; i < hi; i++) s += ys[i] - xs[i];
  return s / (hi - lo);
}
