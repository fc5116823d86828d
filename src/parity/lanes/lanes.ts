/**
 * The two lanes that judge one metric of two phases over a window of steps, in a single pass
 * over typed arrays:
 *
 * - **exact**: every window step bit-identical (IEEE equality, so `+0` equals `-0`); reports
 *   the integer ULP distance (float64, and float32 when every compared value is
 *   float32-representable), max/mean absolute and max relative difference.
 * - **tolerance**: `|b - a| <= atol + rtol * |a|` with a failure budget `max_failures`.
 *
 * In both lanes a window step missing on one side, or NaN/infinite on one side, is a failure
 * that no budget absorbs: the verdict is FAIL, never PASS. A step missing from **both** sides or
 * NaN/infinite on **both** sides is no evidence either way: ERROR, unless another step fails.
 * An empty window is ERROR.
 *
 * @module
 */

import { type ComparisonSummary, DEFAULT_METRIC } from "../../types/mod.ts";
import { ulps } from "../../format/mod.ts";
import type { MetricSeries } from "../../metrics/mod.ts";
import { ulpDistance32, ulpDistance64 } from "./ulp.ts";

/** Lane names of {@link compareLane} (the drift lane is `drift.ts`). */
export type Lane = "exact" | "tolerance";

/** Settings of one lane run. */
export interface LaneOptions {
  /** Which lane. */
  lane: Lane;
  /** Metric to compare (`loss` by default). */
  metric?: string;
  /**
   * Steps both sides must have: every integer step of `{from, to}` (inclusive), or explicit
   * ascending steps (see {@link rangeWindow}, {@link unionWindow}).
   */
  window: Float64Array | StepRange;
  /** Tolerance lane: relative tolerance (required there; the defaults live with the schema). */
  rtol?: number;
  /** Tolerance lane: absolute tolerance (required there). */
  atol?: number;
  /** Tolerance lane: failures allowed (required there). */
  maxFailures?: number;
  /** Names of the two sides used in `reason` (default `a`, `b`). */
  names?: [string, string];
}

/** Every integer step from `from` to `to` inclusive. */
export interface StepRange {
  /** First step. */
  from: number;
  /** Last step. */
  to: number;
}

/** A lane's judgement: the comparison fields without name, phases and metric. */
export type LaneResult = Omit<ComparisonSummary, "name" | "a" | "b" | "metric">;

/** Every integer step from `from` to `to` inclusive (empty when `to < from`). */
export function rangeWindow(from: number, to: number): Float64Array {
  const n = Math.max(0, Math.floor(to) - Math.ceil(from) + 1);
  const out = new Float64Array(n);
  const first = Math.ceil(from);
  for (let i = 0; i < n; i++) out[i] = first + i;
  return out;
}

/**
 * Steps where either series carries `metric`, limited to `[from, to]`: the default window of
 * `parity compare` (a step one side lacks is then a failure, not skipped).
 */
export function unionWindow(
  a: MetricSeries,
  b: MetricSeries,
  metric = DEFAULT_METRIC,
  from = Number.NEGATIVE_INFINITY,
  to = Number.POSITIVE_INFINITY,
): Float64Array {
  const out = new Float64Array(a.steps.length + b.steps.length);
  const pa = a.present[metric];
  const pb = b.present[metric];
  let i = 0;
  let j = 0;
  let n = 0;
  const na = a.steps.length;
  const nb = b.steps.length;
  while (i < na || j < nb) {
    const sa = i < na ? a.steps[i] : Number.POSITIVE_INFINITY;
    const sb = j < nb ? b.steps[j] : Number.POSITIVE_INFINITY;
    let step: number;
    let keep: boolean;
    if (sa === sb) {
      step = sa;
      keep = (pa !== undefined && pa[i] === 1) || (pb !== undefined && pb[j] === 1);
      i++;
      j++;
    } else if (sa < sb) {
      step = sa;
      keep = pa !== undefined && pa[i] === 1;
      i++;
    } else {
      step = sb;
      keep = pb !== undefined && pb[j] === 1;
      j++;
    }
    if (keep && step >= from && step <= to) out[n++] = step;
  }
  return out.slice(0, n);
}

const f32 = new Float32Array(1);
const i32 = new Int32Array(f32.buffer);
// Two doubles side by side, read as 32-bit words for an inlined ULP distance.
const pair = new Float64Array(2);
const words = new Uint32Array(pair.buffer);
const HI = (() => {
  pair[0] = 1;
  return words[1] === 0x3ff00000 ? 1 : 0;
})();
const LO = 1 - HI;
const SIGN = 0x80000000;
const TWO_32 = 4294967296;

function orderedF32(x: number): number {
  f32[0] = x;
  const bits = i32[0];
  return bits < 0 ? -(bits & 0x7fffffff) : bits;
}

/**
 * The steps of a window: the listed ones (`explicit`), or the `count` whole steps from `origin`.
 */
function windowSteps(
  window: Float64Array | StepRange,
): { explicit: Float64Array | null; origin: number; count: number } {
  if (window instanceof Float64Array) return { explicit: window, origin: 0, count: window.length };
  const origin = Math.ceil(window.from);
  return { explicit: null, origin, count: Math.max(0, Math.floor(window.to) - origin + 1) };
}

/** Runs one lane; see the module doc for the rules. */
export function compareLane(a: MetricSeries, b: MetricSeries, options: LaneOptions): LaneResult {
  const metric = options.metric ?? DEFAULT_METRIC;
  const lane = options.lane;
  const { rtol = 0, atol = 0, maxFailures: budget = 0 } = lane === "tolerance"
    ? toleranceSettings(options)
    : {};
  const [nameA, nameB] = options.names ?? ["a", "b"];
  const { explicit, origin, count } = windowSteps(options.window);
  const stepAt = (w: number) => (explicit === null ? origin + w : explicit[w]);
  const exact = lane === "exact";

  const stepsA = a.steps;
  const stepsB = b.steps;
  const valuesA = a.values[metric];
  const valuesB = b.values[metric];
  const presentA = a.present[metric];
  const presentB = b.present[metric];
  const na = valuesA === undefined ? 0 : stepsA.length;
  const nb = valuesB === undefined ? 0 : stepsB.length;

  let ia = 0;
  let ib = 0;
  const t = new LaneTally();

  for (let w = 0; w < count; w++) {
    const step = explicit === null ? origin + w : explicit[w];
    while (ia < na && stepsA[ia] < step) ia++;
    while (ib < nb && stepsB[ib] < step) ib++;
    const hasA = ia < na && stepsA[ia] === step && presentA[ia] === 1;
    const hasB = ib < nb && stepsB[ib] === step && presentB[ib] === 1;
    if (!hasA && !hasB) {
      // Neither side logged it: nothing diverged that the metric can show, as for NaN on both.
      t.bothMissing++;
      if (t.firstBoth < 0) t.firstBoth = w;
      continue;
    }
    if (!hasA || !hasB) {
      t.missing++;
      t.failures++;
      t.first ??= {
        w,
        a: hasA ? valuesA[ia] : null,
        b: hasB ? valuesB[ib] : null,
        kind: `missing from ${hasA ? nameB : nameA}`,
      };
      continue;
    }
    const x = valuesA[ia];
    const y = valuesB[ib];
    // NaN fails x - x === 0; so does ±Infinity.
    if (x - x !== 0 && y - y !== 0) {
      // Nothing diverged that the metric can show: no evidence, not a failure.
      t.bothNonFinite++;
      if (t.firstBoth < 0) t.firstBoth = w;
      continue;
    }
    if (x - x !== 0 || y - y !== 0) {
      t.nonFinite++;
      t.failures++;
      t.first ??= { w, a: x, b: y, kind: `not finite (${nameA}=${x}, ${nameB}=${y})` };
      continue;
    }
    const ulp = t.add(x, y);
    if (ulp === 0) continue; // equal
    if (exact || t.diff > atol + rtol * Math.abs(x)) {
      t.failures++;
      t.first ??= {
        w,
        a: x,
        b: y,
        kind: `${nameA}=${x}, ${nameB}=${y}, ` +
          (exact ? ulpPhrase(x, y, ulp) : `outside the tolerance by |b-a|=${t.diff}, rel ${t.rel}`),
      };
    }
  }

  return t.result(lane, metric, count, stepAt, exact ? null : { rtol, atol, budget });
}

/** What {@link judgeLane} needs beyond the result's counts. */
interface LaneFirsts {
  metric: string;
  /** What the first failing step shows. */
  firstKind: string;
  firstFailStep: number | null;
  /** The first step with no evidence on either side. */
  firstBothStep: number | null;
}

/** Sets a lane result's verdict and the sentence that says why, from its counts. */
function judgeLane(result: LaneResult, t: LaneFirsts): void {
  const { metric, firstKind } = t;
  const { compared, first_step: firstStep, last_step: lastStep } = result;
  const failures = result.failures ?? 0;
  const missing = result.missing_steps ?? 0;
  const nonFinite = result.non_finite ?? 0;
  const bothNonFinite = result.both_non_finite ?? 0;
  const bothMissing = result.both_missing ?? 0;
  const exact = result.lane === "exact";
  const { rtol, atol, max_failures: budget = 0 } = result;
  const span = compared > 0 ? `steps ${firstStep}..${lastStep}` : "";
  if (compared === 0) {
    result.verdict = "ERROR";
    result.reason = `the window is empty: no step of ${metric} to compare, so nothing is proven.`;
  } else if (missing > 0 || nonFinite > 0) {
    result.verdict = "FAIL";
    const parts = [];
    if (missing > 0) parts.push(`${missing} missing`);
    if (nonFinite > 0) parts.push(`${nonFinite} NaN/infinite`);
    result.reason = `${metric} first fails at step ${t.firstFailStep} (${firstKind}); ${
      parts.join(" and ")
    } of ${compared} window steps (${span}), and such steps always fail.`;
  } else if (bothNonFinite + bothMissing > 0 && failures === 0) {
    result.verdict = "ERROR";
    result.reason = noEvidenceReason(metric, compared, t.firstBothStep!, {
      bothNonFinite,
      bothMissing,
    });
  } else if (exact) {
    if (failures > 0) {
      result.verdict = "FAIL";
      result.reason =
        `${metric} first differs at step ${t.firstFailStep} (${firstKind}); ${failures} of ${compared} steps (${span}) differ.`;
    } else {
      result.reason = `all ${compared} steps (${span}) of ${metric} are bit-identical.`;
    }
  } else if (failures > budget) {
    result.verdict = "FAIL";
    result.reason =
      `${metric} leaves the tolerance first at step ${t.firstFailStep} (${firstKind}); ${failures} of ${compared} steps (${span}) outside rtol ${rtol}, atol ${atol}, budget ${budget}.`;
  } else if (failures > 0) {
    result.reason =
      `${failures} of ${compared} steps (${span}) of ${metric} outside rtol ${rtol}, atol ${atol}, within the budget of ${budget}.`;
  } else {
    result.reason =
      `all ${compared} steps (${span}) of ${metric} within rtol ${rtol}, atol ${atol}.`;
  }
}

/**
 * The differences of the steps where both sides are finite: |b − a|, relative difference, ULP
 * distance and, while every value is a float32, the float32 ULP distance.
 */
class LaneTally {
  failures = 0;
  missing = 0;
  nonFinite = 0;
  bothNonFinite = 0;
  bothMissing = 0;
  /** Index into the window of the first step with no evidence on either side. */
  firstBoth = -1;
  /** The first failing step: its index into the window, values and what it shows. */
  first: { w: number; a: number | null; b: number | null; kind: string } | null = null;
  finiteCount = 0;
  sumAbs = 0;
  maxAbs = 0;
  maxRel = 0;
  maxUlp = 0;
  maxUlp32 = 0;
  allF32 = true;
  /** |b − a| of the last unequal pair added. */
  diff = 0;
  /** Its relative difference. */
  rel = 0;

  /** Adds a pair; returns its ULP distance (0: equal). */
  add(x: number, y: number): number {
    this.finiteCount++;
    if (x === y) {
      if (this.allF32 && Math.fround(x) !== x) this.allF32 = false;
      return 0;
    }
    const diff = this.diff = Math.abs(y - x);
    this.sumAbs += diff;
    if (diff > this.maxAbs) this.maxAbs = diff;
    const ax = Math.abs(x);
    const rel = this.rel = ax === 0 ? Number.POSITIVE_INFINITY : diff / ax;
    if (rel > this.maxRel) this.maxRel = rel;
    // Inlined ulpDistance64 (exact below 2^53; beyond that the BigInt definition decides).
    pair[0] = x;
    pair[1] = y;
    const hx = words[HI];
    const hy = words[2 + HI];
    let ulp = hx >= SIGN === hy >= SIGN
      ? Math.abs((hx - hy) * TWO_32 + (words[LO] - words[2 + LO]))
      : ((hx & 0x7fffffff) + (hy & 0x7fffffff)) * TWO_32 + (words[LO] + words[2 + LO]);
    if (ulp >= Number.MAX_SAFE_INTEGER) ulp = ulpDistance64(x, y);
    if (ulp > this.maxUlp) this.maxUlp = ulp;
    if (this.allF32) {
      if (Math.fround(x) === x && Math.fround(y) === y) {
        const u = Math.abs(orderedF32(x) - orderedF32(y));
        if (u > this.maxUlp32) this.maxUlp32 = u;
      } else this.allF32 = false;
    }
    return ulp;
  }

  /** The lane's result, judged (`tolerance`: the tolerance lane's settings, else none). */
  result(
    lane: LaneResult["lane"],
    metric: string,
    count: number,
    stepAt: (w: number) => number,
    tolerance: { rtol: number; atol: number; budget: number } | null,
  ): LaneResult {
    const compared = count;
    const first = this.first;
    const firstStep = compared > 0 ? stepAt(0) : null;
    const lastStep = compared > 0 ? stepAt(compared - 1) : null;
    const result: LaneResult = {
      lane,
      verdict: "PASS",
      first_step: firstStep,
      last_step: lastStep,
      compared,
      first_divergent_step: first !== null ? stepAt(first.w) : null,
      last_matching_step: first === null ? lastStep : first.w > 0 ? stepAt(first.w - 1) : null,
      ...this.summary(),
      divergence: first !== null
        ? { step: stepAt(first.w), a: jsonNumber(first.a), b: jsonNumber(first.b) }
        : null,
      failures: this.failures,
      missing_steps: this.missing,
      non_finite: this.nonFinite,
      ...(this.bothNonFinite > 0 ? { both_non_finite: this.bothNonFinite } : {}),
      ...(this.bothMissing > 0 ? { both_missing: this.bothMissing } : {}),
      ...(tolerance
        ? { rtol: tolerance.rtol, atol: tolerance.atol, max_failures: tolerance.budget }
        : {}),
    };
    judgeLane(result, {
      metric,
      firstKind: first?.kind ?? "",
      firstFailStep: first !== null ? stepAt(first.w) : null,
      firstBothStep: this.firstBoth >= 0 ? stepAt(this.firstBoth) : null,
    });
    return result;
  }

  /** The result's difference fields (null without a finite pair). */
  summary() {
    const any = this.finiteCount > 0;
    return {
      max_abs: any ? this.maxAbs : null,
      mean_abs: any ? this.sumAbs / this.finiteCount : null,
      max_rel: any ? this.maxRel : null,
      max_ulp: any ? this.maxUlp : null,
      max_ulp_f32: any && this.allF32 ? this.maxUlp32 : null,
    };
  }
}

/**
 * One sentence for the steps neither side can speak for (missing from both, NaN on both): the
 * same wording for both kinds, since both are no evidence.
 */
function noEvidenceReason(
  metric: string,
  compared: number,
  first: number,
  counts: { bothNonFinite: number; bothMissing: number },
): string {
  const kinds = [];
  if (counts.bothMissing > 0) kinds.push(`missing from both sides at ${counts.bothMissing}`);
  if (counts.bothNonFinite > 0) {
    kinds.push(`NaN or infinite on both sides at ${counts.bothNonFinite}`);
  }
  const hint = counts.bothNonFinite > 0
    ? " Find where the loss blew up in both runs (it is no resume divergence)."
    : " Log every window step in both runs, or narrow the window.";
  return `${metric} is ${
    kinds.join(" and ")
  } of ${compared} window steps (first: step ${first}), ` +
    `so nothing can be proven there; the other steps agree.${hint}`;
}

/** The tolerance lane's settings; each is required (a lane has no defaults of its own). */
function toleranceSettings(options: LaneOptions): Required<
  Pick<LaneOptions, "rtol" | "atol" | "maxFailures">
> {
  const { rtol, atol, maxFailures } = options;
  if (rtol === undefined || atol === undefined || maxFailures === undefined) {
    throw new TypeError("the tolerance lane needs rtol, atol and maxFailures");
  }
  return { rtol, atol, maxFailures };
}

/** JSON cannot hold NaN or infinities: they become null (the reason names them). */
function jsonNumber(x: number | null): number | null {
  return x === null || !Number.isFinite(x) ? null : x;
}

/** `3 ULP (f32) apart` when both values are float32s, else the float64 count. */
function ulpPhrase(x: number, y: number, ulp64: number): string {
  const ulp32 = ulpDistance32(x, y);
  return `${ulp32 === null ? ulps(ulp64, "f64") : ulps(ulp32, "f32")} apart`;
}
