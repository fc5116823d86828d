// The strip under a log |b − a| axis: steps where b = a bit for bit (a log axis has no place for
// 0) and steps where a side is NaN or infinite. Consecutive steps of one kind are one bar, so a
// 10,000-step identical stretch costs one mark, not 10,000 ticks.

import { count, exact } from "../format/mod.ts";
import { type ChartSpec, FAIL_COLOR } from "./_spec.ts";

/** Strip row of the steps where b equals a bit for bit. */
export const IDENTICAL_LABEL = "b = a";
/** Strip row of the steps where a side is NaN or infinite (and they differ). */
export const NON_FINITE_LABEL = "NaN/∞";

/** One bar of the strip: consecutive compared steps of one kind. */
export interface StripRun {
  /** {@link IDENTICAL_LABEL} or {@link NON_FINITE_LABEL}. */
  kind: string;
  /** First step. */
  from: number;
  /** Last step. */
  to: number;
  /** Left edge of the bar (half a step before `from`). */
  lo: number;
  /** Right edge of the bar (half a step after `to`). */
  hi: number;
  /** `steps 23–31 (9)` or `step 21`. */
  steps_text: string;
}

/**
 * The strip runs of aligned rows (in step order): consecutive rows that are both identical, or
 * both non-finite, form one run.
 */
export function stripRuns(rows: readonly { step: number; a: number; b: number }[]): StripRun[] {
  const runs: StripRun[] = [];
  let open: StripRun | null = null;
  let n = 0;
  for (const r of rows) {
    const kind = r.a === r.b
      ? IDENTICAL_LABEL
      : !Number.isFinite(r.b - r.a)
      ? NON_FINITE_LABEL
      : null;
    if (open && kind === open.kind) {
      open.to = r.step;
      n++;
      continue;
    }
    if (open) runs.push(close(open, n));
    open = kind === null ? null : { kind, from: r.step, to: r.step, lo: 0, hi: 0, steps_text: "" };
    n = 1;
  }
  if (open) runs.push(close(open, n));
  return runs;
}

function close(run: StripRun, n: number): StripRun {
  run.lo = run.from - 0.5;
  run.hi = run.to + 0.5;
  run.steps_text = n === 1
    ? `step ${exact(run.from)}`
    : `steps ${exact(run.from)}–${exact(run.to)} (${count(n)})`;
  return run;
}

/** Kinds present in `runs`, in strip order ({@link IDENTICAL_LABEL} first); never empty. */
export function stripKinds(runs: readonly StripRun[]): string[] {
  const kinds = [IDENTICAL_LABEL, NON_FINITE_LABEL].filter((k) => runs.some((r) => r.kind === k));
  return kinds.length > 0 ? kinds : [IDENTICAL_LABEL];
}

/**
 * The strip view: one row per kind, a bar per run.
 *
 * @param data The view's `data` (inline values or a named dataset of {@link StripRun}s).
 * @param x The step encoding of the plot above (its field is replaced by the bar edges).
 * @param width View width.
 * @param kinds Rows to show (from {@link stripKinds}).
 */
export function stripView(
  data: ChartSpec,
  x: ChartSpec,
  width: number,
  kinds: readonly string[],
): ChartSpec {
  return {
    width,
    height: 12 * kinds.length,
    data,
    // Few marks, and a bar may reach half a step past the frame: clipping costs nothing here.
    mark: { type: "rect", clip: true, strokeWidth: 1 },
    encoding: {
      x: { ...x, field: "lo" },
      x2: { field: "hi" },
      y: { field: "kind", type: "nominal", title: null, scale: { domain: kinds } },
      // The outline keeps a one-step run visible on a 10,000-step axis.
      color: {
        field: "kind",
        type: "nominal",
        legend: null,
        scale: { domain: [IDENTICAL_LABEL, NON_FINITE_LABEL], range: ["#555", FAIL_COLOR] },
      },
      stroke: {
        field: "kind",
        type: "nominal",
        legend: null,
        scale: { domain: [IDENTICAL_LABEL, NON_FINITE_LABEL], range: ["#555", FAIL_COLOR] },
      },
      tooltip: [
        { field: "kind", type: "nominal", title: "where" },
        { field: "steps_text", type: "nominal", title: "steps" },
      ],
    },
  };
}
