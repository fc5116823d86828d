/**
 * The evidence rules: what each situation a comparison meets does to its verdict, decided here
 * and nowhere else. A lane measures; these rules turn what it measured, with what is known about
 * the inputs (rounded values, a noisy trainer, metrics with errors), into the comparison's
 * verdict and the `codes` that say why. docs/parity.md ("Evidence rules") lists them as one
 * table, and `evidence_rules_test.ts` walks every row of it through the real judging code.
 *
 * @module
 */

import type { ComparisonSummary, Verdict } from "../types/mod.ts";
import { PARITY_CODES } from "./codes.ts";
import { worstVerdict } from "./worst_verdict.ts";
import type { LaneResult } from "./lanes/mod.ts";

/** Codes of the lane's own evidence situations (the diagnostic codes live in `codes.ts`). */
const EVIDENCE_CODES = {
  /** A window step is missing on one side: FAIL. */
  stepMissing: "step-missing",
  /** A window step is missing from both sides: no evidence, ERROR unless another step fails. */
  stepMissingBoth: "step-missing-both",
  /** A window step is NaN or infinite on one side: FAIL. */
  stepNonFinite: "step-non-finite",
  /** A window step is NaN or infinite on both sides: no evidence, ERROR unless another fails. */
  stepNonFiniteBoth: "step-non-finite-both",
  /** No step to compare at all: ERROR. */
  windowEmpty: "window-empty",
} as const;

/** The rounded sides of a comparison and the lane judged again at their rounding precision. */
export interface RoundedEvidence {
  /** Names of the rounded sides. */
  sides: string[];
  /** The rounding step in words (e.g. `±5e-5 + 5e-5·|x|`), for the reason. */
  step: string;
  /**
   * The lane rerun with the rounding step allowed: a failure there is a real difference. Null
   * when the lane can judge the rounded values itself (a tolerance wider than the rounding).
   */
  precise: LaneResult | null;
}

/** The metrics diagnostics at `error` level of one input of a comparison. */
export interface InputErrors {
  /** The phase whose metrics have errors. */
  phase: string;
  /** Their codes, each once. */
  codes: string[];
}

/** What is known about a comparison's inputs besides the lane's own result. */
export interface EvidenceFacts {
  /** The rounded sides, when any side is rounded. */
  rounded?: RoundedEvidence;
  /** Set when the noise floor is not identical: its largest relative deviation. */
  noisy?: { max_rel_deviation?: number };
  /** Error-level metrics diagnostics of either input. */
  inputErrors: InputErrors[];
}

/**
 * Applies every evidence rule, in the order of docs/parity.md ("Verdict"), to a comparison
 * whose fields the lane filled: returns the comparison with its verdict, `codes` and reason.
 */
export function applyEvidenceRules(
  lane: ComparisonSummary,
  facts: EvidenceFacts,
): ComparisonSummary {
  const result: ComparisonSummary = { ...lane };
  const codes = laneCodes(lane);
  const notes: string[] = [];
  let verdict: Verdict = lane.verdict;
  let laneReason = lane.reason ?? "";
  // Steps neither side can speak for never let a lane that measured nothing else PASS.
  if ((lane.both_missing ?? 0) + (lane.both_non_finite ?? 0) > 0 && verdict === "PASS") {
    verdict = "ERROR";
  }

  const rounded = facts.rounded;
  if (rounded !== undefined) {
    codes.push(PARITY_CODES.rounded);
    if (rounded.precise !== null) {
      // The lane's own differences may be rounding alone: only the precise rerun can FAIL.
      const precise = rounded.precise;
      result.first_divergent_step = precise.first_divergent_step;
      result.last_matching_step = precise.last_matching_step;
      result.divergence = precise.divergence;
      result.failures = precise.failures;
      if (precise.drift !== undefined) result.drift = precise.drift;
      if (precise.verdict === "FAIL") {
        verdict = "FAIL";
        notes.push(
          `metrics are rounded (${rounded.sides.join(", ")}), but the values differ beyond ` +
            `the rounding step (${rounded.step})`,
        );
        laneReason = precise.reason ?? laneReason;
      } else {
        verdict = worstVerdict([precise.verdict, "ERROR"]);
        notes.push(
          `metrics are rounded (${rounded.sides.join(", ")}): ${article(lane.lane)} ` +
            `${lane.lane} lane is meaningless`,
        );
      }
    }
  }

  const hardFailure = (lane.missing_steps ?? 0) > 0 || (lane.non_finite ?? 0) > 0;
  if (
    lane.lane === "exact" && facts.noisy !== undefined && !hardFailure &&
    (verdict === "PASS" || verdict === "FAIL")
  ) {
    notes.push(
      `the trainer is not deterministic (repeated baselines differ by up to ${facts.noisy.max_rel_deviation} relative), so an exact verdict is impossible; the lane alone said ${verdict}`,
    );
    verdict = "ABSTAIN";
    codes.push(PARITY_CODES.nondeterministic);
  }

  const inputs = inputErrorNotes(lane, facts.inputErrors);
  if (inputs.notes.length > 0) verdict = worstVerdict([verdict, "ERROR"]);
  notes.push(...inputs.notes);
  codes.push(...inputs.codes);
  if (lane.compared === 1) {
    verdict = worstVerdict([verdict, "ERROR"]);
    notes.push(`the window holds 1 step; at least 2 are needed (window-too-small)`);
    codes.push(PARITY_CODES.windowTooSmall);
  }
  result.verdict = verdict;
  result.reason = laneReason;
  return withNotes(result, notes, codes);
}

/**
 * A comparison whose inputs have `error`-level metrics diagnostics (reader errors, steps outside
 * the schedule) is ERROR at best: each input's codes join `codes` and the reason says so. The
 * judge applies it to the diagnostics it learns after the engine (schedule bounds).
 */
export function capByInputErrors(
  comparison: ComparisonSummary,
  errors: readonly InputErrors[],
): ComparisonSummary {
  const { notes, codes } = inputErrorNotes(comparison, errors);
  if (notes.length === 0) return comparison;
  return withNotes(
    { ...comparison, verdict: worstVerdict([comparison.verdict, "ERROR"]) },
    notes,
    codes,
  );
}

/**
 * A comparison of a metric one side lacks entirely (`parity compare`) is ERROR, whatever its lane
 * said: a usage or source problem, not a divergence. The reason names the side.
 */
export function metricAbsent(
  comparison: ComparisonSummary,
  side: "a" | "b",
  metric: string,
): ComparisonSummary {
  const reason = `${side} has no ${metric}. ${comparison.reason ?? ""}`.trim();
  return { ...comparison, verdict: "ERROR", reason };
}

/** The notes and codes of the input errors that concern this comparison's two phases. */
function inputErrorNotes(
  comparison: Pick<ComparisonSummary, "a" | "b">,
  errors: readonly InputErrors[],
): { notes: string[]; codes: string[] } {
  const mine = errors.filter((e) =>
    (e.phase === comparison.a || e.phase === comparison.b) && e.codes.length > 0
  );
  return {
    notes: mine.map((e) => `the metrics of ${e.phase} have errors (${e.codes.join(", ")})`),
    codes: mine.flatMap((e) => e.codes),
  };
}

/** The codes of what the lane itself met (missing, non-finite, empty window). */
function laneCodes(lane: LaneResult): string[] {
  const codes: string[] = [];
  if (lane.compared === 0) codes.push(EVIDENCE_CODES.windowEmpty);
  if ((lane.missing_steps ?? 0) > 0) codes.push(EVIDENCE_CODES.stepMissing);
  if ((lane.both_missing ?? 0) > 0) codes.push(EVIDENCE_CODES.stepMissingBoth);
  if ((lane.non_finite ?? 0) > 0) codes.push(EVIDENCE_CODES.stepNonFinite);
  if ((lane.both_non_finite ?? 0) > 0) codes.push(EVIDENCE_CODES.stepNonFiniteBoth);
  return codes;
}

/** Puts notes before the reason and adds codes to `codes`, each code once. */
function withNotes(
  comparison: ComparisonSummary,
  notes: string[],
  codes: string[],
): ComparisonSummary {
  const all = [...new Set([...(comparison.codes ?? []), ...codes])];
  const reason = comparison.reason ?? "";
  const text = notes.length === 0
    ? reason
    : `${capitalize(notes.join("; "))}. ${capitalize(reason)}`.trim();
  return { ...comparison, reason: text, ...(all.length > 0 ? { codes: all } : {}) };
}

function article(word: string): string {
  return /^[aeiou]/.test(word) ? "an" : "a";
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
