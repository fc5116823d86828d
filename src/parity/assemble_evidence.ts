/**
 * Assembles a run's evidence: from what the pipeline observed ({@link RunOutcomes}: how each
 * phase ended, what it logged and wrote, the golden and process-state documents it read), every
 * typed record {@link judge} weighs (the metrics engine's comparisons, state and save checks and
 * diagnostics, schedule bounds, the golden, plan verification and execution, phase endings,
 * interruption and report failures). Which phases count as evidence, which resumes a plan is paired
 * with, and which checks apply are decided here, beside the judge, not in the pipeline.
 *
 * @module
 */

import type { MetricSeries } from "../metrics/mod.ts";
import {
  type Diagnostic,
  type PhaseSpec,
  type PhaseSummary,
  type PlanSyncSummary,
  type ResolvedPlan,
  savesCheckpoint,
} from "../types/mod.ts";
import { PARITY_CODES } from "./codes.ts";
import { evaluateRun } from "./evaluate.ts";
import { type GoldenFacts, judgeAgainstGolden } from "./golden_rules.ts";
import type { RunEvidence } from "./judge.ts";
import { planExecutionChecks, type PlanExecutionFacts } from "./state/mod.ts";
import { scheduleDiagnostics } from "./schedule_bounds.ts";
import type { CheckpointFilesEvidence, PhaseEvidence } from "./types.ts";

/** What the pipeline observed of one phase. */
export interface PhaseOutcome {
  /** Its resolved spec (as launched). */
  spec: PhaseSpec;
  /** How it ended. */
  summary: PhaseSummary;
  /** Ran or was reused, so its folder holds its outputs. */
  present: boolean;
  /** Its metrics as read ahead, when it ran. */
  metrics?: Promise<MetricSeries>;
  /** The checkpoint reader's record of its folder (`spec.readBack`), when it was read. */
  checkpointFiles?: CheckpointFilesEvidence;
  /** Plan phases: the verifier's summary. */
  plan?: PlanSyncSummary;
}

/** Everything the pipeline observed of one run, facts only. */
export interface RunOutcomes {
  /** Every phase of the plan, in plan order. */
  phases: PhaseOutcome[];
  /** What stopped the harness early, if anything. */
  interrupted: { reason: string } | null;
  /** Warnings learned while the run ran (unrequested checkpoint tags). */
  warnings: Diagnostic[];
  /** The golden of this run's environment, when the experiment asks for one. */
  golden?: GoldenFacts;
  /** Every plan-execute phase's facts. */
  planExecutions: PlanExecutionFacts[];
}

/** The assembled evidence, and the metric series the engine read (for `losses.csv`). */
export interface AssembledEvidence {
  /** What the judge weighs. */
  evidence: RunEvidence;
  /** Metrics of every phase that had a readable source, baseline first. */
  series: Map<string, MetricSeries>;
}

/** Roles whose metrics are no evidence of training (they run tools, not the trainer). */
const TOOL_ROLES: ReadonlySet<PhaseSpec["role"]> = new Set(["convert", "plan", "execute"]);

/** Gathers every record the judge weighs from the run's outcomes; decides no verdict itself. */
export async function assembleEvidence(
  plan: ResolvedPlan,
  outcomes: RunOutcomes,
): Promise<AssembledEvidence> {
  const states = outcomes.phases;
  const phases: PhaseEvidence[] = states
    .filter((s) => !TOOL_ROLES.has(s.spec.role))
    .map(({ spec, summary, present, metrics, checkpointFiles }) => ({
      name: spec.name,
      role: spec.role,
      status: summary.status,
      metricsPath: present ? spec.metrics?.path : undefined,
      metrics: spec.metrics,
      resumeKind: spec.resumeKind,
      ...(spec.fromStep !== undefined ? { fromStep: spec.fromStep } : {}),
      topology: spec.topologyKey,
      lane: spec.lane,
      ...(savesCheckpoint(spec) ? { saves: true } : {}),
      ...(spec.calibration ? { calibration: spec.calibration } : {}),
      ...(present && metrics ? { series: metrics } : {}),
      // The checkpoint folders the harness read back (trainer.checkpoint_format).
      ...(summary.status === "ok" && savesCheckpoint(spec) && spec.readBack && checkpointFiles
        ? { checkpointFiles }
        : {}),
    }));
  const split = plan.phases.find(savesCheckpoint);
  const convert = states.find((s) =>
    s.spec.role === "convert" && s.summary.status === "ok" && s.spec.readBack
  );
  const evaluation = await evaluateRun({
    ...plan.judge,
    gradAccum: split?.gradAccum,
    phases,
    ...(convert?.checkpointFiles
      ? { converted: { phase: convert.spec.name, files: convert.checkpointFiles } }
      : {}),
  });
  const planSync = pairPlansWithReshards(states);
  const planExecutions = planExecutionChecks(planSync, outcomes.planExecutions);
  const scheduleBounds = scheduleDiagnostics(
    states.filter((s) => s.summary.status === "ok").map((s) => s.spec),
    evaluation.series,
    plan.judge.saveAt,
    // Steps counted in micro-batches exceed the schedule by design; that code already says so.
    evaluation.diagnostics.some((d) => d.code === PARITY_CODES.stepUnitMicroBatches),
  );
  const baseline = plan.phases.find((s) => s.role === "baseline");
  const golden = outcomes.golden
    ? judgeAgainstGolden(outcomes.golden, {
      baseline: baseline &&
          states.find((s) => s.spec.name === baseline.name)?.summary.status === "ok"
        ? evaluation.series.get(baseline.name)
        : undefined,
      metrics: plan.judge.metrics,
      steps: plan.judge.steps,
      // An undeclared tolerance leaves a golden on other facts exact.
      tolerance: plan.judge.tolerance_declared ? plan.judge.tolerance : undefined,
    })
    : undefined;
  const evidence: RunEvidence = {
    phases: states.map((s) => s.summary),
    resumeKinds: Object.fromEntries(plan.phases.map((p) => [p.name, p.resumeKind])),
    saveAt: plan.judge.saveAt,
    warnings: [...plan.warnings, ...outcomes.warnings],
    metrics: {
      comparisons: evaluation.comparisons,
      state_checks: evaluation.state_checks,
      noise_floor: evaluation.noise_floor,
      diagnostics: evaluation.diagnostics,
    },
    scheduleBounds,
    ...(golden ? { golden } : {}),
    planSync,
    planExecutions,
    interrupted: outcomes.interrupted,
    reportFailures: [],
  };
  return { evidence, series: evaluation.series };
}

/** Each verified plan beside the resumes that actually ran on its target topology. */
function pairPlansWithReshards(states: readonly PhaseOutcome[]): PlanSyncSummary[] {
  return states.flatMap(({ plan: verified, spec }) => {
    if (!verified) return [];
    const reshards = states.filter((s) =>
      s.spec.role === "resume" && s.spec.resumeKind !== "plan" &&
      s.spec.topologyKey === spec.topologyKey
    ).map((s) => s.spec.name);
    return [reshards.length > 0 ? { ...verified, reshard_resumes: reshards } : verified];
  });
}
