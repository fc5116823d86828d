/**
 * Which comparisons a run makes. Without `compare:`: the baseline against every resume in the
 * lane the resolved plan chose for it (`src/experiment/plan/resolve_plan.ts`: exact on the saved
 * topology, drift otherwise, unless the resume sets `lane`), and exact between every two resumes that share a target topology other than the
 * saved one (e.g. universal reshard vs plan reshard; two resumes on the saved topology are each
 * compared exactly with the baseline already). Each uses every listed metric both phases report
 * (`loss` always). Explicit `compare:` entries replace the defaults; their default window is
 * `1..steps` between two full runs (baseline, repeats), `1..save_at` when one side is the
 * split, and the resumed steps otherwise.
 *
 * @module
 */

import { DEFAULT_METRIC, type Diagnostic, type LaneChoice } from "../types/mod.ts";
import { PARITY_CODES } from "./codes.ts";
import type { EvaluationInput, PhaseEvidence, PlannedComparison } from "./types.ts";

/** Whether `phase` reports `metric`; undefined when unknown (phase not read). */
export type ReportsMetric = (phase: string, metric: string) => boolean | undefined;

/** Result of {@link planComparisons}. */
export interface ComparisonPlan {
  /** Comparisons to judge. */
  comparisons: PlannedComparison[];
  /** `unknown-phase`, `metric-not-reported`. */
  diagnostics: Diagnostic[];
}

const FULL_RUN_ROLES = new Set(["baseline", "repeat"]);

/** Plans the comparisons of a run (see the module doc). */
export function planComparisons(input: EvaluationInput, reports: ReportsMetric): ComparisonPlan {
  return input.compare !== undefined && input.compare.length > 0
    ? planExplicit(input)
    : planDefaults(input, reports);
}

function planExplicit(input: EvaluationInput): ComparisonPlan {
  const byName = new Map(input.phases.map((p) => [p.name, p]));
  const comparisons: PlannedComparison[] = [];
  const diagnostics: Diagnostic[] = [];
  for (const entry of input.compare ?? []) {
    for (const side of [entry.a, entry.b]) {
      if (!byName.has(side)) {
        diagnostics.push({
          level: "error",
          code: PARITY_CODES.unknownPhase,
          phase: side,
          message: `compare entry ${entry.name ?? `${entry.a}~${entry.b}`} names phase ${side}, ` +
            "which this run does not have",
        });
      }
    }
    const a = byName.get(entry.a);
    const b = byName.get(entry.b);
    const fullRun = a !== undefined && b !== undefined && FULL_RUN_ROLES.has(a.role) &&
      FULL_RUN_ROLES.has(b.role);
    // The split logs 1..save_at; a full run against it is judged on those steps.
    const withSplit = a?.role === "split" || b?.role === "split";
    const planned: PlannedComparison = {
      name: entry.name ?? `${entry.a}~${entry.b}`,
      a: entry.a,
      b: entry.b,
      metric: entry.metric,
      lane: entry.lane,
      laneReason: "declared in compare:",
      window: entry.window ??
        (withSplit
          ? { from: 1, to: input.saveAt }
          : { from: fullRun ? 1 : resumedFrom(input, [a, b]) + 1, to: input.steps }),
      explicit: true,
    };
    if (entry.rtol !== undefined) planned.rtol = entry.rtol;
    if (entry.atol !== undefined) planned.atol = entry.atol;
    if (entry.max_failures !== undefined) planned.max_failures = entry.max_failures;
    comparisons.push(planned);
  }
  return { comparisons, diagnostics };
}

function planDefaults(input: EvaluationInput, reports: ReportsMetric): ComparisonPlan {
  const comparisons: PlannedComparison[] = [];
  const diagnostics: Diagnostic[] = [];
  const baseline = input.phases.find((p) => p.role === "baseline");
  // The saving phase: the split, or a fused split's baseline.
  const split = input.phases.find((p) => p.saves) ?? input.phases.find((p) => p.role === "split");
  const resumes = input.phases.filter((p) => p.role === "resume");
  const saved = split?.topology;
  const add = (a: PhaseEvidence, b: PhaseEvidence, lane: LaneChoice) => {
    const window = { from: resumedFrom(input, [a, b]) + 1, to: input.steps };
    for (const metric of metricsFor(input.metrics, a, b, reports, diagnostics)) {
      comparisons.push({
        name: `${a.name}~${b.name}`,
        a: a.name,
        b: b.name,
        metric,
        lane: lane.lane,
        laneReason: lane.reason,
        window,
        explicit: false,
      });
    }
  };
  if (baseline !== undefined) {
    for (const resume of resumes) {
      add(baseline, resume, resolvedLane(resume));
    }
  }
  for (let i = 0; i < resumes.length; i++) {
    for (let j = i + 1; j < resumes.length; j++) {
      const x = resumes[i];
      const y = resumes[j];
      if (x.topology === y.topology && x.topology !== saved) {
        add(x, y, { lane: "exact", reason: "both resumes run on the same target topology" });
      }
    }
  }
  return { comparisons, diagnostics };
}

/**
 * The last saved step either side starts after: a resume's `fromStep` (default the last save),
 * so two resumes from different saves are compared where both ran.
 */
export function resumedFrom(
  input: Pick<EvaluationInput, "saveAt">,
  sides: readonly (PhaseEvidence | undefined)[],
): number {
  const starts = sides.flatMap((p) =>
    p !== undefined && (p.role === "resume" || p.role === "calibrate")
      ? [p.fromStep ?? input.saveAt]
      : []
  );
  return starts.length > 0 ? Math.max(...starts) : input.saveAt;
}

/** A resume's lane: the resolved plan decides it, once; the engine never guesses one. */
function resolvedLane(resume: PhaseEvidence): LaneChoice {
  if (resume.lane === undefined) {
    throw new TypeError(`resume ${resume.name} has no lane: resolve the plan first`);
  }
  return resume.lane;
}

/** Listed metrics both phases report; `loss` always (its absence must surface, not vanish). */
function metricsFor(
  metrics: string[],
  a: PhaseEvidence,
  b: PhaseEvidence,
  reports: ReportsMetric,
  diagnostics: Diagnostic[],
): string[] {
  const out: string[] = [];
  const list = metrics.length > 0 ? metrics : [DEFAULT_METRIC];
  for (const metric of list) {
    const ra = reports(a.name, metric);
    const rb = reports(b.name, metric);
    if (metric === "loss" || (ra !== false && rb !== false)) {
      out.push(metric);
      continue;
    }
    const lacking = ra === false && rb === false ? `${a.name} and ${b.name}` : ra ? b.name : a.name;
    diagnostics.push({
      level: "warning",
      code: PARITY_CODES.metricNotReported,
      phase: ra ? b.name : a.name,
      metric,
      message: `${lacking} do(es) not report ${metric}, so ${a.name}~${b.name} does not compare it`,
    });
  }
  return out;
}
