/**
 * `evaluateRun`: reads every phase's metrics, measures the noise floor, plans and judges the
 * comparisons, checks restored state and pre-flight pitfalls, and folds all of it into one
 * verdict (FAIL > ERROR > ABSTAIN > PASS).
 *
 * @module
 */

import { type MetricSeries, READER_CODES, readMetrics } from "../metrics/mod.ts";
import {
  type ComparisonSummary,
  type Diagnostic,
  type DriftSpec,
  type NoiseFloorSummary,
  type StateCheckSummary,
} from "../types/mod.ts";
import { stat } from "../format/mod.ts";
import { PARITY_CODES } from "./codes.ts";
import { metricsVerdict } from "./judge.ts";
import {
  compareDrift,
  compareLane,
  deriveNoiseRtol,
  type DriftOptions,
  firstAtLeast,
  type LaneResult,
  looksRounded,
  measureNoiseFloor,
  MIN_BLOCK_STEPS,
  type NoiseRtol,
  roundedSides,
  roundingBound,
  type SensitivityContext,
  type StepRange,
  withSensitivity,
} from "./lanes/mod.ts";
import { applyEvidenceRules, type EvidenceFacts } from "./evidence_rules.ts";
import { planComparisons } from "./plan_comparisons.ts";
import { checkAccumulation, checkLrSchedule, checkResumedSteps } from "./preflight.ts";
import {
  checkConvertedFiles,
  checkRestoredState,
  checkSavedState,
  checkSavePerturbation,
  findDigestEvent,
  withGradBuffers,
} from "./state/mod.ts";
import type {
  CheckpointFilesEvidence,
  Evaluation,
  EvaluationInput,
  PhaseEvidence,
  PlannedComparison,
} from "./types.ts";

/** Roles whose phases train and therefore log metrics. */
const TRAINING_ROLES = new Set(["baseline", "split", "resume", "repeat", "calibrate"]);

/** Tolerance lane settings in force for a run. */
export interface ResolvedTolerance {
  /** Relative tolerance. */
  rtol: number;
  /** Absolute tolerance. */
  atol: number;
  /** Failure budget. */
  max_failures: number;
  /** Set when `tolerance: auto` derived `rtol` from the noise floor. */
  derived?: boolean;
  /** The tolerance derived from the noise floor, when one was (see {@link deriveNoiseRtol}). */
  noise?: NoiseRtol;
}

/**
 * The rtol/atol/budget in force: the resolved fixed tolerance, or with `tolerance: auto` the
 * rtol derived from the noise floor; `noise` holds the derived tolerance whenever there is one.
 */
export function resolveTolerance(
  tolerance: EvaluationInput["tolerance"],
  noise: NoiseFloorSummary,
): ResolvedTolerance {
  const derived = deriveNoiseRtol(noise, tolerance);
  const budget = { atol: tolerance.atol, max_failures: tolerance.max_failures };
  if ("auto" in tolerance) {
    return { rtol: (derived as NoiseRtol).rtol, ...budget, derived: true, noise: derived };
  }
  return { rtol: tolerance.rtol, ...budget, ...(derived ? { noise: derived } : {}) };
}

/**
 * Judges one run. Phases that are not `ok` are not judged: comparisons that need them are ERROR
 * ("phase X did not complete"); their metrics, when any step was logged, are still read into
 * `series` (for charts) but their reader diagnostics are left out (the pipeline reports the
 * phase itself).
 */
export async function evaluateRun(input: EvaluationInput): Promise<Evaluation> {
  const diagnostics: Diagnostic[] = [];
  const phases = new Map(input.phases.map((p) => [p.name, p]));
  const series = await readPhaseSeries(input.phases, diagnostics, input.saveAt);
  const judged = (name: string): MetricSeries | undefined =>
    phases.get(name)?.status === "ok" ? series.get(name) : undefined;

  // Noise floor first: it decides the tolerance and whether exact lanes can speak.
  const baseline = input.phases.find((p) => p.role === "baseline");
  const repeats = input.phases.filter((p) => p.role === "repeat");
  const noise = measureNoiseFloor(
    baseline ? judged(baseline.name) : undefined,
    repeats.map((p) => ({ name: p.name, series: judged(p.name) })),
    input.metrics.length > 0 ? input.metrics : ["loss"],
  );
  diagnostics.push(...noise.diagnostics);
  const tolerance = resolveTolerance(input.tolerance, noise.summary);
  if (tolerance.noise) {
    noise.summary.derived_rtol = tolerance.noise.rtol;
    noise.summary.derivation = tolerance.noise.derivation;
  }

  const plan = planComparisons(input, (phase, metric) => {
    const s = judged(phase);
    return s === undefined ? undefined : s.values[metric] !== undefined;
  });
  diagnostics.push(...plan.diagnostics);
  const planned = noise.summary.identical || tolerance.noise === undefined
    ? plan.comparisons
    : withNoiseLanes(plan.comparisons, tolerance.noise);

  const context: JudgeContext = {
    phases,
    judged,
    noise: noise.summary,
    tolerance,
    diagnostics,
    drift: driftOptions(input.drift),
  };
  const sensitivity: SensitivityContext = {
    phases,
    judged,
    judge: (c) => judgeComparison(c, context),
    diagnostics,
    firstResumed: input.saveAt + 1,
  };
  const comparisons = planned.map((c) =>
    withSensitivity(judgeComparison(c, context), c, sensitivity)
  );
  if (comparisons.length === 0) {
    diagnostics.push({
      level: "error",
      code: PARITY_CODES.noComparisons,
      message: "no comparison was made (no baseline, no resume, or no compare entry), " +
        "so nothing is proven",
    });
  }

  // The saving phase: the split, or the baseline of a fused split (issue 37).
  const split = input.phases.find((p) => p.saves) ?? input.phases.find((p) => p.role === "split");
  const state_checks = stateChecks(input, { split, baseline, judged, diagnostics });
  diagnostics.push(...checkResumedSteps(input.steps, input.saveAt));
  const named = (p: PhaseEvidence | undefined) =>
    p === undefined ? undefined : { name: p.name, series: judged(p.name) };
  diagnostics.push(
    ...checkAccumulation(named(split), named(baseline), input.steps, input.saveAt, input.gradAccum),
  );
  for (const resume of input.phases.filter((p) => p.role === "resume" && p.status === "ok")) {
    diagnostics.push(
      ...checkLrSchedule(
        named(baseline),
        { name: resume.name, series: judged(resume.name) },
        resume.fromStep ?? input.saveAt,
      ),
    );
  }

  return {
    verdict: metricsVerdict({ comparisons, state_checks, diagnostics }),
    comparisons,
    state_checks,
    noise_floor: noise.summary,
    diagnostics,
    series,
  };
}

/**
 * Reads every phase's metrics, baselines first: a completed phase's series and reader
 * diagnostics, an incomplete one's partial curve (for the charts) without them.
 */
async function readPhaseSeries(
  phases: readonly PhaseEvidence[],
  diagnostics: Diagnostic[],
  saveAt: number,
): Promise<Map<string, MetricSeries>> {
  const series = new Map<string, MetricSeries>();
  const ordered = [
    ...phases.filter((p) => p.role === "baseline"),
    ...phases.filter((p) => p.role !== "baseline"),
  ];
  for (const phase of ordered) {
    if (phase.metricsPath === undefined) {
      if (phase.status === "ok" && TRAINING_ROLES.has(phase.role)) {
        diagnostics.push({
          level: "error",
          code: READER_CODES.missing,
          phase: phase.name,
          message: `phase ${phase.name} completed but names no metrics source`,
        });
      }
      continue;
    }
    const read = withFilesEvent(
      await (phase.series ?? readMetrics(phase.metricsPath, { ...phase.metrics })),
      phase.checkpointFiles,
      saveAt,
    );
    if (phase.status === "ok") {
      series.set(phase.name, read);
      for (const d of read.diagnostics) diagnostics.push({ ...d, phase: phase.name });
    } else if (read.steps.length > 0) {
      series.set(phase.name, read); // partial curves still help the charts
    }
  }
  return series;
}

/** What {@link stateChecks} reads beyond the input. */
interface StateCheckContext {
  split: PhaseEvidence | undefined;
  baseline: PhaseEvidence | undefined;
  judged: (name: string) => MetricSeries | undefined;
  diagnostics: Diagnostic[];
}

/**
 * The restore check of every resume and, where the baseline or the split reported its state at
 * the save step, the save check first; otherwise a note that the save went unjudged.
 */
function stateChecks(
  input: EvaluationInput,
  { split, baseline, judged, diagnostics }: StateCheckContext,
): StateCheckSummary[] {
  const fused = split !== undefined && split.role === "baseline";
  const incomplete = (phase: string, check?: StateCheckSummary["check"]): StateCheckSummary => ({
    phase,
    ...(check ? { check } : {}),
    verdict: "ERROR",
    available: false,
    differing: [],
    reason: `phase ${phase} did not complete.`,
  });
  const state_checks: StateCheckSummary[] = input.phases
    .filter((p) => p.role === "resume")
    .map((p) => {
      const fromStep = p.fromStep ?? input.saveAt;
      const check = p.status === "ok"
        ? withGradBuffers(
          checkRestoredState(
            p.name,
            split ? judged(split.name) : undefined,
            judged(p.name),
            fromStep,
          ),
          baseline?.status === "ok" ? judged(baseline.name) : undefined,
          judged(p.name),
          fromStep,
        )
        : incomplete(p.name);
      // With several saves, say which one the resume loads.
      return (input.saveSteps ?? []).length > 1 ? { ...check, from_step: fromStep } : check;
    });
  // The save check, where the baseline reported its state at the save step (`${digest_at}`).
  const snapshot = baseline?.status === "ok"
    ? findDigestEvent(judged(baseline.name), "snapshot", input.saveAt)
    : undefined;
  // Or where the split read its checkpoint files back (a `files` event): the three-way check.
  const files = split?.status === "ok"
    ? findDigestEvent(judged(split.name), "files", input.saveAt)
    : undefined;
  const saveChecked = split !== undefined && baseline !== undefined && (snapshot || files);
  if (saveChecked) {
    state_checks.unshift(
      split.status === "ok"
        ? checkSavedState(split.name, judged(baseline.name), judged(split.name), input.saveAt)
        : incomplete(split.name, "save"),
    );
  }
  if (fused) {
    // The baseline saved and trained on: did the save change the state it continued with?
    state_checks.unshift(
      split.status === "ok"
        ? checkSavePerturbation(split.name, judged(split.name), input.saveAt)
        : incomplete(split.name, "perturb"),
    );
  }
  if (
    !saveChecked && split && baseline?.status === "ok" &&
    findDigestEvent(judged(split.name), "saved")
  ) {
    // The trainer hashes its state but the baseline reported none at the save step: say the
    // save itself went unjudged rather than let a PASS imply it was.
    diagnostics.push({
      level: "info",
      code: PARITY_CODES.saveNotChecked,
      phase: baseline.name,
      message: `${baseline.name} reported no snapshot of its state at step ${input.saveAt} ` +
        "(${digest_at} / PARITY_DIGEST_AT), so the save is not judged: a checkpoint that " +
        "captured the wrong state would pass its restore checks",
    });
  }

  // The universal folder the converter wrote, read back: it must hold the state saved at the step
  // it converted (its universal resumes' from_step).
  const converted = input.converted;
  if (converted?.files.document && split?.status === "ok") {
    const step = input.phases.find((p) => p.resumeKind === "universal")?.fromStep ?? input.saveAt;
    state_checks.push(
      checkConvertedFiles(converted.phase, judged(split.name), converted.files.document, step),
    );
  }

  return state_checks;
}

/**
 * A split's series with the harness's read-back of its checkpoint files as a `files` event at the
 * save step, first, so it is the one the save check reads (a trainer may report its own).
 */
function withFilesEvent(
  series: MetricSeries,
  files: CheckpointFilesEvidence | undefined,
  saveAt: number,
): MetricSeries {
  if (!files?.document) return series;
  const fields = { event: "files", step: saveAt, source: "harness", ...files.document };
  return {
    ...series,
    events: [{ event: "files", step: saveAt, line: 0, fields }, ...series.events],
  };
}

/**
 * An ABSTAINing exact lane must not hide a real bug: each default exact comparison gets a
 * companion tolerance lane at the derived rtol (explicit `compare:` entries keep their lanes).
 */
function withNoiseLanes(planned: PlannedComparison[], noise: NoiseRtol): PlannedComparison[] {
  const { multiplier, floor, source } = noise.derivation;
  const laneReason = `derived from the noise floor (max(max_rel_deviation × ${multiplier}, ${
    stat(floor)
  })${source === "tolerance-auto" ? ", tolerance: auto" : ""}), beside the exact lane it silences`;
  return planned.flatMap((c) =>
    !c.explicit && c.lane === "exact"
      ? [c, { ...c, lane: "tolerance" as const, rtol: noise.rtol, laneReason }]
      : [c]
  );
}

interface JudgeContext extends JudgeOptions {
  phases: Map<string, PhaseEvidence>;
  judged: (name: string) => MetricSeries | undefined;
}

/** An ERROR comparison that could not be run at all. */
function unjudged(plan: PlannedComparison, reason: string): ComparisonSummary {
  return unjudgedComparison({
    name: plan.name,
    a: plan.a,
    b: plan.b,
    metric: plan.metric,
    lane: plan.lane,
    lane_reason: plan.laneReason,
    verdict: "ERROR",
    first_step: plan.window.from,
    last_step: plan.window.to,
    reason,
  });
}

/** The fields that say who compared what and why; the rest of a judged-nothing comparison. */
type UnjudgedFields =
  & Pick<
    ComparisonSummary,
    "name" | "a" | "b" | "metric" | "lane" | "lane_reason" | "verdict" | "first_step" | "last_step"
  >
  & { reason: string };

/** A comparison that compared no step (ERROR or ABSTAIN): every measurement is null. */
export function unjudgedComparison(fields: UnjudgedFields): ComparisonSummary {
  return {
    ...fields,
    compared: 0,
    first_divergent_step: null,
    last_matching_step: null,
    max_abs: null,
    mean_abs: null,
    max_rel: null,
    max_ulp: null,
  };
}

/** Why a series has no loss when the alias rule saw several candidates, from its finding. */
function lossHint(plan: PlannedComparison, series: MetricSeries): string {
  if (plan.metric !== "loss") return "";
  const found = series.diagnostics.find((d) => d.loss_alias?.rule === "ambiguous")?.loss_alias;
  return found
    ? ` (several metrics could be it: ${found.candidates.join(", ")}; name one with metrics.loss)`
    : "";
}

function judgeComparison(plan: PlannedComparison, context: JudgeContext): ComparisonSummary {
  const sides: MetricSeries[] = [];
  for (const name of [plan.a, plan.b]) {
    const phase = context.phases.get(name);
    if (phase === undefined) return unjudged(plan, `phase ${name} is not part of this run.`);
    if (phase.status !== "ok") return unjudged(plan, `phase ${name} did not complete.`);
    const s = context.judged(name);
    if (s === undefined || s.steps.length === 0) {
      return unjudged(plan, `phase ${name} has no metrics to compare.`);
    }
    if (s.values[plan.metric] === undefined) {
      return unjudged(plan, `phase ${name} does not report ${plan.metric}${lossHint(plan, s)}.`);
    }
    sides.push(s);
  }
  const [a, b] = sides;
  return judgeSeries(plan, a, b, plan.window, context);
}

/** What {@link judgeSeries} needs besides the two series. */
export interface JudgeOptions {
  /** Noise floor: when not identical, exact lanes ABSTAIN. */
  noise: NoiseFloorSummary;
  /** Tolerance in force (a plan's own rtol/atol/max_failures win). */
  tolerance: ResolvedTolerance;
  /** Where `metrics-rounded` findings are added (once per phase and metric). */
  diagnostics: Diagnostic[];
  /** Drift lane thresholds in force (required when a comparison is in the drift lane). */
  drift?: DriftOptions;
}

/** The resolved `drift:` thresholds as the drift lane's options (no noise allowance yet). */
export function driftOptions(spec: DriftSpec): DriftOptions {
  return {
    earlySteps: spec.early_steps,
    earlyUlp: spec.early_ulp,
    envelopeFactor: spec.envelope,
    blocks: spec.blocks,
    minBlockSteps: MIN_BLOCK_STEPS,
    biasT: spec.bias_t,
    earlyRel: 0,
  };
}

function driftSettings(context: JudgeOptions): DriftOptions {
  if (context.drift === undefined) throw new TypeError("a drift comparison needs drift settings");
  // A measured noise floor widens the early bound to the derived tolerance: noise is not a bug.
  if (context.noise.identical) return context.drift;
  return { ...context.drift, earlyRel: context.tolerance.noise?.rtol ?? 0 };
}

/**
 * Judges two read series over a window (a step range or explicit steps): runs the lane, detects
 * rounded sides (rerunning the lane at their rounding precision) and collects the inputs' reader
 * errors; the verdict is then {@link applyEvidenceRules}'s. Used by runs and by `parity compare`.
 */
export function judgeSeries(
  plan: PlannedComparison,
  a: MetricSeries,
  b: MetricSeries,
  window: Float64Array | StepRange,
  context: JudgeOptions,
): ComparisonSummary {
  const span = !(window instanceof Float64Array)
    ? window
    : window.length > 0
    ? { from: window[0], to: window[window.length - 1] }
    : plan.window;
  const tolerance = {
    rtol: plan.rtol ?? context.tolerance.rtol,
    atol: plan.atol ?? context.tolerance.atol,
    maxFailures: plan.max_failures ?? context.tolerance.max_failures,
  };
  const series: LaneSeries = { plan, a, b, window, context, tolerance };
  const lane = runLane(series, null);
  const result: ComparisonSummary = {
    name: plan.name,
    a: plan.a,
    b: plan.b,
    metric: plan.metric,
    ...lane,
    lane_reason: plan.laneReason,
  };
  const facts: EvidenceFacts = { inputErrors: [] };
  const windows = [windowValues(a, plan.metric, span), windowValues(b, plan.metric, span)];
  const rounding = roundedSides(windows[0], windows[1]);
  const sides = [plan.a, plan.b].filter((_, i) => rounding[i] !== null);
  if (sides.length > 0) {
    const [ra, rb] = rounding.map(roundingBound);
    const allow = { atol: ra.atol + rb.atol, rtol: ra.rtol + rb.rtol };
    // A tolerance wider than the rounding step judges the rounded values itself.
    const judgeable = plan.lane === "tolerance" &&
      fitsTolerance(allow, tolerance, windows[0].values);
    facts.rounded = {
      sides,
      step: `±${allow.atol.toPrecision(2)} + ${allow.rtol.toPrecision(2)}·|x|`,
      precise: judgeable ? null : runLane(series, allow),
    };
    for (const [i, name] of [plan.a, plan.b].entries()) {
      if (rounding[i] === null) continue;
      const one = rounding[1 - i] === null && !looksRounded(windows[i].values, windows[i].present);
      addOnce(context.diagnostics, {
        level: judgeable ? "warning" : "error",
        code: PARITY_CODES.rounded,
        phase: name,
        metric: plan.metric,
        message: `every ${plan.metric} value of ${name} in steps ${span.from}..${span.to} ` +
          (one
            ? `has fewer digits than ${i === 0 ? plan.b : plan.a}'s: ${name}'s metrics are rounded`
            : "has at most 5 decimals or 6 significant digits: the metrics are rounded") +
          (judgeable ? "" : `, so the ${plan.lane} lane cannot judge them`),
      });
    }
  }
  if (!context.noise.identical) {
    facts.noisy = { max_rel_deviation: context.noise.max_rel_deviation };
  }
  for (const [name, s] of [[plan.a, a], [plan.b, b]] as const) {
    const codes = [...new Set(s.diagnostics.filter((d) => d.level === "error").map((d) => d.code))];
    if (codes.length > 0) facts.inputErrors.push({ phase: name, codes });
  }
  return applyEvidenceRules(result, facts);
}

/** One comparison's two series and settings, for {@link runLane}. */
interface LaneSeries {
  plan: PlannedComparison;
  a: MetricSeries;
  b: MetricSeries;
  window: Float64Array | StepRange;
  context: JudgeOptions;
  tolerance: { rtol: number; atol: number; maxFailures: number };
}

/**
 * Runs the comparison's lane; `allow`: the rounding step of rounded metrics, which a difference
 * must pass to be real (null: none).
 */
function runLane(
  { plan, a, b, window, context, tolerance }: LaneSeries,
  allow: { atol: number; rtol: number } | null,
): LaneResult {
  if (plan.lane === "drift") {
    const drift = driftSettings(context);
    return compareDrift(a, b, {
      metric: plan.metric,
      window,
      names: [plan.a, plan.b],
      drift: allow === null
        ? drift
        : { ...drift, earlyRel: drift.earlyRel + allow.rtol, earlyAbs: allow.atol },
    });
  }
  const names: [string, string] = [plan.a, plan.b];
  if (allow === null) {
    return compareLane(a, b, {
      lane: plan.lane,
      metric: plan.metric,
      window,
      names,
      ...tolerance,
    });
  }
  // At the rounding precision: a difference beyond the rounding step is real.
  const own = plan.lane === "tolerance" ? tolerance : { rtol: 0, atol: 0, maxFailures: 0 };
  const precise = compareLane(a, b, {
    lane: "tolerance",
    metric: plan.metric,
    window,
    names,
    rtol: own.rtol + allow.rtol,
    atol: own.atol + allow.atol,
    maxFailures: own.maxFailures,
  });
  return { ...precise, lane: plan.lane };
}

/** Whether the rounding step stays within the tolerance over the range of `|a|` in the window. */
function fitsTolerance(
  allow: { atol: number; rtol: number },
  tolerance: { atol: number; rtol: number },
  values: Float64Array,
): boolean {
  let lo = Number.POSITIVE_INFINITY;
  let hi = 0;
  for (const x of values) {
    if (!Number.isFinite(x)) continue;
    lo = Math.min(lo, Math.abs(x));
    hi = Math.max(hi, Math.abs(x));
  }
  if (hi === 0 && lo === Number.POSITIVE_INFINITY) return true;
  // Both bounds are linear in |a|: checking the ends checks every step.
  return [lo, hi].every((m) => allow.atol + allow.rtol * m <= tolerance.atol + tolerance.rtol * m);
}

/** A side's values of `metric` inside the window (empty when it lacks the metric). */
function windowValues(
  s: MetricSeries,
  metric: string,
  window: { from: number; to: number },
): { values: Float64Array; present: Float64Array | Uint8Array } {
  const values = s.values[metric];
  const present = s.present[metric];
  if (values === undefined) return { values: new Float64Array(0), present: new Uint8Array(0) };
  const lo = firstAtLeast(s.steps, window.from);
  const hi = firstAtLeast(s.steps, window.to + 1);
  return { values: values.subarray(lo, hi), present: present.subarray(lo, hi) };
}

function addOnce(list: Diagnostic[], diagnostic: Diagnostic): void {
  const same = list.find((d) =>
    d.code === diagnostic.code && d.phase === diagnostic.phase && d.metric === diagnostic.metric
  );
  if (same === undefined) list.push(diagnostic);
  else if (same.level !== "error" && diagnostic.level === "error") {
    Object.assign(same, diagnostic);
  }
}
