/**
 * Which comparisons the divergence chart draws, one panel per resume path: the culprits of the
 * failing comparisons first (the phase that broke, from `culprits()`, not side `b`), each through
 * its comparison with a reference phase when there is one, then every other resume path judged
 * by a tolerance or drift lane. Paths whose differences are bit-identical share one panel.
 *
 * @module
 */

import { blamedPhases, culprits } from "../parity/mod.ts";
import type { ComparisonSummary, RunSummary } from "../types/mod.ts";
import { alignDifference, type DivergencePanel, isIdentical } from "./difference.ts";
import type { Series } from "./losses_table.ts";

/** What {@link divergencePanels} found. */
export interface DivergenceSelection {
  /** Panels, culprits first (earliest divergence first), then the other judged paths. */
  panels: DivergencePanel[];
  /** Resume paths compared on an exact lane with a reference and bit-identical throughout. */
  identical: string[];
}

/**
 * Picks the panels of the divergence chart.
 *
 * @param summary The run summary (phases with roles, comparisons).
 * @param series The series of a phase and metric.
 */
export function divergencePanels(
  summary: Pick<RunSummary, "phases" | "comparisons">,
  series: (phase: string, metric: string) => Series,
): DivergenceSelection {
  const run = { phases: summary.phases, comparisons: summary.comparisons };
  const resumes = new Set(summary.phases.filter((p) => p.role === "resume").map((p) => p.name));
  const isReference = (c: ComparisonSummary) => !resumes.has(c.a);
  const rowsOf = (c: ComparisonSummary) =>
    alignDifference(series(c.a, c.metric), series(c.b, c.metric), c.first_step, c.last_step);
  const chosen = new Map<string, DivergencePanel>();
  const add = (phase: string, c: ComparisonSummary, culprit: boolean) => {
    const key = `${phase}\u0000${c.metric}`;
    if (chosen.has(key)) return;
    const rows = rowsOf(c);
    if (rows.length === 0) return;
    const label = c.metric === "loss" ? phase : `${phase} · ${c.metric}`;
    chosen.set(key, { label, phases: [phase], culprit, comparison: c, rows });
  };
  for (const culprit of culprits(run)) {
    const blaming = summary.comparisons.filter((c) => blamedPhases(c, run).includes(culprit.phase));
    // Against a reference first: its difference is the culprit's own error, not a sum of two.
    const ordered = [...blaming.filter(isReference), ...blaming.filter((c) => !isReference(c))];
    for (const c of ordered) add(culprit.phase, c, true);
  }
  const identical: string[] = [];
  for (const c of summary.comparisons) {
    if (!isReference(c)) continue;
    if (c.lane !== "exact") add(c.b, c, false);
    else if (c.verdict === "PASS" && isIdentical(rowsOf(c))) {
      identical.push(c.metric === "loss" ? c.b : `${c.b} · ${c.metric}`);
    }
  }
  return { panels: mergeIdentical([...chosen.values()]), identical };
}

/** Panels drawing the same numbers under the same lane become one panel. */
function mergeIdentical(panels: DivergencePanel[]): DivergencePanel[] {
  const out: DivergencePanel[] = [];
  for (const p of panels) {
    const twin = out.find((q) => sameDrawing(q, p));
    if (twin) twin.phases.push(...p.phases);
    else out.push({ ...p, phases: [...p.phases] });
  }
  for (const p of out) {
    if (p.phases.length > 1) p.label = `${p.label} (= ${p.phases.length - 1} more)`;
  }
  return out;
}

function sameDrawing(p: DivergencePanel, q: DivergencePanel): boolean {
  const x = p.comparison;
  const y = q.comparison;
  if (
    p.culprit !== q.culprit || x.a !== y.a || x.metric !== y.metric || x.lane !== y.lane ||
    x.verdict !== y.verdict || x.first_divergent_step !== y.first_divergent_step ||
    x.rtol !== y.rtol || x.atol !== y.atol ||
    JSON.stringify(x.drift ?? null) !== JSON.stringify(y.drift ?? null) ||
    p.rows.length !== q.rows.length
  ) {
    return false;
  }
  return p.rows.every((r, i) =>
    r.step === q.rows[i].step && Object.is(r.a, q.rows[i].a) && Object.is(r.b, q.rows[i].b)
  );
}
