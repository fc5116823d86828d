/**
 * The golden's rules: what a run's baseline against the stored golden of its environment proves.
 * The pipeline reads the golden file and this run's environment ({@link GoldenFacts}); these rules
 * pick the lane (exact on the same facts; the golden's noise floor, else the declared tolerance, on
 * the same key with other facts) and decide the golden's verdict (ABSTAIN when there is no golden
 * or it stores none of the compared metrics, ERROR when the baseline did not complete).
 *
 * @module
 */

import type { MetricSeries } from "../metrics/mod.ts";
import {
  type ComparisonSummary,
  type GoldenSummary,
  type NoiseFloorSummary,
  TOLERANCE_DEFAULTS,
  type ToleranceSpec,
} from "../types/mod.ts";
import { unjudgedComparison } from "./evaluate.ts";
import type { GoldenEvidence } from "./judge.ts";
import { worstVerdict } from "./worst_verdict.ts";
import { compareLane, deriveNoiseRtol } from "./lanes/mod.ts";

/** Name of the golden comparisons in `summary.json`. */
const GOLDEN_COMPARISON = "golden~baseline";

/** The header record of a golden file. */
export interface GoldenHeader {
  /** Always `golden`, so metrics readers treat the record as an event. */
  event: "golden";
  /** Format version. */
  golden_version: 1;
  /** Experiment name. */
  experiment: string;
  /** Environment key the file is filed under. */
  environment_key: string;
  /** Flat environment facts compared to tell "same environment" from "same key". */
  environment: Record<string, string>;
  /** Run folder the baseline came from. */
  source_run: string;
  /** ISO time of the save. */
  saved_at: string;
  /** Metrics stored. */
  metrics: string[];
  /** The source run's noise floor, when it measured one. */
  noise_floor: NoiseFloorSummary | null;
}

/** What the pipeline read for the golden judgement: facts only, nothing decided. */
export interface GoldenFacts {
  /** This run's environment key. */
  environment_key: string;
  /** The golden file's path as shown. */
  file: string;
  /** The golden, when a file exists for the key. */
  golden?: { header: GoldenHeader; series: MetricSeries };
  /** This run's flat environment facts (compared with the golden header's). */
  environment: Record<string, string>;
}

/** The run's side of the golden judgement. */
export interface GoldenBaseline {
  /** The baseline's metrics; undefined when it did not complete. */
  baseline: MetricSeries | undefined;
  /** Metrics to compare. */
  metrics: string[];
  /** Schedule length: the window is every step 1..steps. */
  steps: number;
  /** Declared tolerance (used on the same key with other facts when no noise floor is stored). */
  tolerance?: ToleranceSpec;
}

/** Judges a run's baseline against the golden the facts hold (or do not). */
export function judgeAgainstGolden(facts: GoldenFacts, run: GoldenBaseline): GoldenEvidence {
  const { environment_key: key, file } = facts;
  const metric0 = run.metrics[0] ?? "loss";
  const golden = facts.golden;
  if (!golden) {
    const reason = `no golden for environment ${key} (${file}); save one from a trusted run ` +
      `with: deno task parity golden save <run-dir>`;
    return {
      summary: { verdict: "ABSTAIN", environment_key: key, file, found: false, reason },
      comparisons: [placeholder(metric0, "ABSTAIN", reason)],
      diagnostics: [{
        level: "warning",
        code: "golden-missing",
        phase: "baseline",
        message: reason,
      }],
    };
  }
  const base = { environment_key: key, file, found: true, source_run: golden.header.source_run };
  if (!run.baseline) {
    const reason = "the baseline did not complete, so it cannot be compared with the golden";
    return {
      summary: { ...base, verdict: "ERROR", reason },
      comparisons: [placeholder(metric0, "ERROR", reason)],
      diagnostics: [],
    };
  }
  const now = facts.environment;
  const differences = [...new Set([...Object.keys(now), ...Object.keys(golden.header.environment)])]
    .sort().filter((k) => (now[k] ?? "") !== (golden.header.environment[k] ?? ""))
    .map((k) => `${k}: ${golden.header.environment[k] ?? "(unset)"} → ${now[k] ?? "(unset)"}`);
  let lane: "exact" | "tolerance" = "exact";
  let rtol: number | undefined;
  let atol = 0;
  let maxFailures = 0;
  let reason = "same environment as the golden: bit-identical expected";
  if (differences.length > 0) {
    const fromNoise = noiseRtol(golden.header.noise_floor);
    const declared = run.tolerance;
    if (fromNoise !== undefined) {
      [lane, rtol, reason] = ["tolerance", fromNoise, "same key, other facts: golden noise floor"];
    } else if (declared) {
      lane = "tolerance";
      rtol = "auto" in declared ? declared.floor : declared.rtol;
      atol = declared.atol;
      maxFailures = declared.max_failures;
      reason = "same key, other facts: declared tolerance";
    } else {
      reason = "same key, other facts, but no noise floor or tolerance declared: exact";
    }
    reason += ` (${differences.join("; ")})`;
  }
  const metrics = run.metrics.filter((m) => golden.header.metrics.includes(m));
  if (metrics.length === 0) {
    const why = `the golden stores ${golden.header.metrics.join(", ")}, ` +
      `not the compared metrics (${run.metrics.join(", ")})`;
    return {
      summary: { ...base, verdict: "ABSTAIN", reason: why },
      comparisons: [placeholder(metric0, "ABSTAIN", why)],
      diagnostics: [],
    };
  }
  const baseline = run.baseline;
  const comparisons = metrics.map((metric): ComparisonSummary => ({
    name: GOLDEN_COMPARISON,
    a: "golden",
    b: "baseline",
    metric,
    lane_reason: reason,
    ...compareLane(golden.series, baseline, {
      lane,
      metric,
      window: { from: 1, to: run.steps },
      rtol,
      atol,
      maxFailures,
      names: ["golden", "baseline"],
    }),
  }));
  const verdict = worstVerdict(comparisons.map((c) => c.verdict));
  const summary: GoldenSummary = { ...base, verdict, lane, reason };
  if (differences.length > 0) summary.differences = differences;
  return { summary, comparisons, diagnostics: [] };
}

function placeholder(metric: string, verdict: "ABSTAIN" | "ERROR", reason: string) {
  return unjudgedComparison({
    name: GOLDEN_COMPARISON,
    a: "golden",
    b: "baseline",
    metric,
    lane: "exact",
    verdict,
    first_step: null,
    last_step: null,
    reason,
  });
}

/** Relative tolerance a golden's stored noise floor allows, if it measured any noise. */
function noiseRtol(noise: NoiseFloorSummary | null): number | undefined {
  if (!noise || noise.identical) return undefined;
  if (noise.derived_rtol && noise.derived_rtol > 0) return noise.derived_rtol;
  // An older golden stored no derived_rtol: derive it by the rule in force now.
  return noise.max_rel_deviation ? deriveNoiseRtol(noise, TOLERANCE_DEFAULTS)?.rtol : undefined;
}
