/**
 * Which side of a failing comparison broke. A comparison between two resumes fails when either
 * is wrong; naming its `b` side blindly blames a phase that matches the baseline. The culprit is
 * the side that also fails against a reference phase (baseline, split, repeats).
 *
 * @module
 */

import type { ComparisonSummary, PhaseSummary } from "../types/mod.ts";

/** A phase that diverged, with the earliest step any failing comparison blames it at. */
export interface Culprit {
  /** Phase name, e.g. `resume-universal`. */
  phase: string;
  /** Earliest first divergent step among the comparisons that blame it (null: none recorded). */
  step: number | null;
  /** The comparisons that blame it, in summary order. */
  comparisons: string[];
}

/** What {@link culprits} reads of a run. */
export interface CulpritInput {
  /** Phases with their roles (`resume` phases are candidates, the others are references). */
  phases: Pick<PhaseSummary, "name" | "role">[];
  /** All comparisons of the run. */
  comparisons: ComparisonSummary[];
}

/**
 * The phases a failing comparison blames: `b` when `a` is a reference phase; between two resumes,
 * the one that fails against a reference while the other passes, both when both fail, and `b`
 * when neither side was compared with a reference.
 */
export function blamedPhases(cmp: ComparisonSummary, run: CulpritInput): string[] {
  if (cmp.verdict !== "FAIL") return [];
  const resumes = new Set(run.phases.filter((p) => p.role === "resume").map((p) => p.name));
  if (!resumes.has(cmp.a)) return [cmp.b];
  const standing = (phase: string) => {
    const judged = run.comparisons.filter((c) =>
      c.b === phase && !resumes.has(c.a) && c.metric === cmp.metric
    );
    if (judged.some((c) => c.verdict === "FAIL")) return "fails";
    return judged.some((c) => c.verdict === "PASS") ? "passes" : "unknown";
  };
  const a = standing(cmp.a);
  const b = standing(cmp.b);
  if (a === "fails" && b !== "fails") return [cmp.a];
  if (a === "fails" && b === "fails") return [cmp.a, cmp.b];
  return [cmp.b];
}

/** Every blamed phase, earliest divergence first (then in run order), each listed once. */
export function culprits(run: CulpritInput): Culprit[] {
  const found = new Map<string, Culprit>();
  for (const cmp of run.comparisons) {
    for (const phase of blamedPhases(cmp, run)) {
      const entry = found.get(phase) ?? { phase, step: null, comparisons: [] };
      const step = cmp.first_divergent_step;
      if (step !== null && (entry.step === null || step < entry.step)) entry.step = step;
      entry.comparisons.push(cmp.name);
      found.set(phase, entry);
    }
  }
  const order = new Map(run.phases.map((p, i) => [p.name, i]));
  return [...found.values()].sort((x, y) =>
    (x.step ?? Infinity) - (y.step ?? Infinity) ||
    (order.get(x.phase) ?? Infinity) - (order.get(y.phase) ?? Infinity)
  );
}
