/**
 * Restored-state checks: a resume phase's `loaded` event digests against the split phase's
 * `saved` digests, per component (`params`, `exp_avg_sq`, `rng`, ...). Digests hash the logical,
 * unsharded state, so they compare across topologies. No digests on either side is "not
 * available" (N/A), never a pass.
 *
 * @module
 */

import type { EventRecord, MetricSeries } from "../metrics/mod.ts";
import type { StateCheckSummary } from "../types/summary.ts";

/** The event named `name` carrying a `digests` object, preferring one at `step`. */
export function findDigestEvent(
  series: MetricSeries | undefined,
  name: "saved" | "loaded",
  step?: number,
): EventRecord | undefined {
  if (series === undefined) return undefined;
  const candidates = series.events.filter((e) => e.event === name && isDigestMap(e.fields.digests));
  if (candidates.length === 0) return undefined;
  const atStep = candidates.find((e) => e.step === step);
  if (atStep !== undefined) return atStep;
  return name === "saved" ? candidates[candidates.length - 1] : candidates[0];
}

function isDigestMap(x: unknown): x is Record<string, unknown> {
  return x !== null && typeof x === "object" && !Array.isArray(x) &&
    Object.keys(x as object).length > 0;
}

/**
 * Compares `resume`'s loaded digests with `split`'s saved digests. FAIL names the differing
 * components (and `step` when the loaded step is not the saved one); components on one side
 * only make it ERROR (`missing`); no digests on a side makes it N/A.
 */
export function checkRestoredState(
  phase: string,
  split: MetricSeries | undefined,
  resume: MetricSeries | undefined,
  saveAt?: number,
): StateCheckSummary {
  const saved = findDigestEvent(split, "saved", saveAt);
  const loaded = findDigestEvent(resume, "loaded", saveAt);
  if (saved === undefined || loaded === undefined) {
    const side = saved === undefined && loaded === undefined
      ? "neither the split's saved event nor this phase's loaded event carries"
      : saved === undefined
      ? "the split's saved event does not carry"
      : "this phase's loaded event does not carry";
    return {
      phase,
      verdict: "N/A",
      available: false,
      differing: [],
      reason: `${side} state digests, so the restored state cannot be checked.`,
    };
  }
  const a = saved.fields.digests as Record<string, unknown>;
  const b = loaded.fields.digests as Record<string, unknown>;
  const names = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  const differing: string[] = [];
  const missing: string[] = [];
  const compared: string[] = [];
  for (const name of names) {
    if (!(name in a) || !(name in b)) {
      missing.push(name);
      continue;
    }
    compared.push(name);
    if (JSON.stringify(a[name]) !== JSON.stringify(b[name])) differing.push(name);
  }
  if (saved.step !== null && loaded.step !== null && saved.step !== loaded.step) {
    differing.unshift("step");
  }
  const summary: StateCheckSummary = {
    phase,
    verdict: "PASS",
    available: true,
    differing,
    compared,
  };
  if (missing.length > 0) summary.missing = missing;
  if (differing.length > 0) {
    summary.verdict = "FAIL";
    const stepNote = differing[0] === "step"
      ? ` (loaded step ${loaded.step}, saved step ${saved.step})`
      : "";
    summary.reason = `restored state differs from the saved state in ${
      differing.join(", ")
    }${stepNote}.`;
  } else if (missing.length > 0) {
    summary.verdict = "ERROR";
    summary.reason = `components on one side only cannot be verified: ${missing.join(", ")}.`;
  } else {
    summary.reason = `all ${compared.length} state components match the saved digests.`;
  }
  return summary;
}
