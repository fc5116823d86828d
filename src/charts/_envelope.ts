// The |b − a| a lane allows at each step, so a chart can draw the line a failing step crosses:
// the tolerance lane's atol + rtol·|a|, the drift lane's early ULP limit and later envelope.
// Exact lanes allow nothing (null: no line to draw).

import { ulp32 } from "../parity/mod.ts";
import { stat } from "../format/mod.ts";
import type { ComparisonSummary } from "../types/mod.ts";

/** The lane settings an envelope is computed from (a `ComparisonSummary` has them all). */
export type LaneLimits = Pick<ComparisonSummary, "lane" | "rtol" | "atol" | "drift">;

/**
 * Allowed |b − a| per row (rows in step order, the lane's window only), or null for an exact
 * lane. The drift lane's early window is its first `early_steps` compared steps, as in
 * src/parity/lanes/drift.ts; its noise allowance (`earlyRel`) is not in the summary and is not drawn.
 */
export function allowedDifference(
  limits: LaneLimits,
  rows: readonly { a: number }[],
): number[] | null {
  if (limits.lane === "tolerance") {
    const rtol = limits.rtol ?? 0;
    const atol = limits.atol ?? 0;
    return rows.map((r) => atol + rtol * Math.abs(r.a));
  }
  if (limits.lane === "drift" && limits.drift) {
    const d = limits.drift;
    return rows.map((r, i) => i < d.early_steps ? d.early_limit_ulp32 * ulp32(r.a) : d.envelope);
  }
  return null;
}

/** How the envelope reads in a subtitle, e.g. `allowed |b − a| ≤ atol + rtol·|a| (rtol 1e-4, atol 0)`. */
export function envelopeLabel(limits: LaneLimits): string | null {
  if (limits.lane === "tolerance") {
    return `allowed |b − a| ≤ atol + rtol·|a| (rtol ${stat(limits.rtol ?? 0)}, atol ${
      stat(limits.atol ?? 0)
    })`;
  }
  if (limits.lane === "drift" && limits.drift) {
    const d = limits.drift;
    return `allowed |b − a|: ${d.early_limit_ulp32} f32 ULPs of a for ${d.early_steps} steps, ` +
      `then the drift envelope ${stat(d.envelope)}`;
  }
  return null;
}
