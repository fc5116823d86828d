/**
 * The gradient carry-over check: the gradient buffers a resume's first step accumulates onto
 * against the uninterrupted run's at the same step. Both sides report a `grads` event with the
 * `grad_buffers` digest as step save_at + 1 begins (after the framework's own zeroing for that
 * step, before its first backward); an empty buffer (`None` or zeros) digests alike. A fresh
 * process has nothing there, so a baseline whose buffers are not empty carried gradients from
 * step save_at into save_at + 1 (a missing `zero_grad`, an accumulation window crossing the
 * save) that no checkpoint restores. A difference joins the resume's restored-state check as the
 * component `grad_buffers`.
 *
 * @module
 */

import type { EventRecord, MetricSeries } from "../../metrics/mod.ts";
import type { StateCheckSummary } from "../../types/mod.ts";
import { MAX_TENSORS_NAMED } from "./state_checks.ts";

/** The component a gradient carry-over is named by. */
export const GRAD_BUFFERS = "grad_buffers";

/** The `grads` event reporting `grad_buffers` for `step`, if any. */
function gradsAt(series: MetricSeries | undefined, step: number): EventRecord | undefined {
  return series?.events.find((e) => {
    const digests = e.fields.digests;
    return e.event === "grads" && e.step === step && digests !== null &&
      typeof digests === "object" && GRAD_BUFFERS in digests;
  });
}

function tensorMap(event: EventRecord): Record<string, unknown> | undefined {
  const t = event.fields.tensors;
  return t !== null && typeof t === "object" && !Array.isArray(t)
    ? t as Record<string, unknown>
    : undefined;
}

/**
 * `check` (a resume's restored-state check) with `grad_buffers` compared: the baseline's `grads`
 * event at step `saveAt + 1` against the resume's. A difference makes the check FAIL and names
 * `grad_buffers` (and the differing `<param> · grad` tensors when no other component named
 * tensors); equal buffers add `grad_buffers` to what was compared. Where either side reports no
 * `grads` event (a trainer that does not digest its gradients), the check is returned unchanged.
 */
export function withGradBuffers(
  check: StateCheckSummary,
  baseline: MetricSeries | undefined,
  resume: MetricSeries | undefined,
  saveAt: number,
): StateCheckSummary {
  const step = saveAt + 1;
  const reference = gradsAt(baseline, step);
  const candidate = gradsAt(resume, step);
  if (reference === undefined || candidate === undefined) return check;
  const want = (reference.fields.digests as Record<string, unknown>)[GRAD_BUFFERS];
  const got = (candidate.fields.digests as Record<string, unknown>)[GRAD_BUFFERS];
  const compared = [...(check.compared ?? []), GRAD_BUFFERS];
  if (JSON.stringify(want) === JSON.stringify(got)) return { ...check, compared };
  const sentence = `The gradient buffers at the start of step ${step} differ from the ` +
    `uninterrupted run's (${GRAD_BUFFERS}): it carried gradients into that step that this ` +
    "fresh process does not have.";
  const out: StateCheckSummary = {
    ...check,
    verdict: "FAIL",
    available: true,
    differing: [...check.differing, GRAD_BUFFERS],
    compared,
    reason: check.available && check.reason ? `${check.reason} ${sentence}` : sentence,
  };
  const a = tensorMap(reference), b = tensorMap(candidate);
  if ((check.differing_tensors ?? []).length === 0 && a !== undefined && b !== undefined) {
    const names = [...new Set([...Object.keys(a), ...Object.keys(b)])]
      .filter((n) => JSON.stringify(a[n]) !== JSON.stringify(b[n]));
    if (names.length > 0) {
      out.differing_tensors = names.slice(0, MAX_TENSORS_NAMED);
      out.differing_tensors_total = names.length;
    }
  }
  return out;
}
