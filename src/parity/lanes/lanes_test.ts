import assert from "node:assert/strict";
import { seriesOf } from "../../../test/_testing/metrics_fixtures.ts";
import { compareLane, rangeWindow, unionWindow } from "./lanes.ts";
import { TOLERANCE_DEFAULTS } from "../../types/defaults.ts";

/** The tolerance lane as a run without a `tolerance:` block resolves it. */
const TOL = {
  rtol: TOLERANCE_DEFAULTS.rtol,
  atol: TOLERANCE_DEFAULTS.atol,
  maxFailures: TOLERANCE_DEFAULTS.max_failures,
};
import { ulpDistance64 } from "./ulp.ts";

const steps = [21, 22, 23, 24];
const base = [2.5, 2.4, 2.3, 2.2];
const next = (x: number) => x + Number.EPSILON * 2; // 1 ULP above a value in [2, 4)

Deno.test("compareLane() exact passes bit-identical series with zero distances", () => {
  const r = compareLane(seriesOf(steps, { loss: base }), seriesOf(steps, { loss: base }), {
    lane: "exact",
    window: rangeWindow(21, 24),
  });
  assert.equal(r.verdict, "PASS");
  assert.equal(r.compared, 4);
  assert.equal(r.first_divergent_step, null);
  assert.equal(r.last_matching_step, 24);
  assert.equal(r.max_abs, 0);
  assert.equal(r.max_ulp, 0);
  assert.equal(r.failures, 0);
  assert.match(r.reason ?? "", /all 4 steps \(steps 21\.\.24\) of loss are bit-identical/);
});

Deno.test("compareLane() exact fails one ULP away and reports the first divergence", () => {
  const b = [2.5, 2.4, next(2.3), next(next(2.2))];
  const r = compareLane(seriesOf(steps, { loss: base }), seriesOf(steps, { loss: b }), {
    lane: "exact",
    window: rangeWindow(21, 24),
    names: ["baseline", "resume"],
  });
  assert.equal(r.verdict, "FAIL");
  assert.equal(r.first_divergent_step, 23);
  assert.equal(r.last_matching_step, 22);
  assert.deepEqual(r.divergence, { step: 23, a: 2.3, b: next(2.3) });
  assert.equal(r.max_ulp, 2);
  assert.equal(r.failures, 2);
  assert.equal(r.max_ulp_f32, null, "float64 values have no float32 distance");
  assert.equal(r.max_abs, Math.abs(next(next(2.2)) - 2.2));
  assert.match(
    r.reason ?? "",
    /first differs at step 23 \(baseline=2\.3, resume=.*, 1\u00a0ULP\u00a0\(f64\) apart\)/,
  );
});

Deno.test("compareLane() reports float32 ULPs when both sides are float32 values", () => {
  const a = base.map(Math.fround);
  const f = new Float32Array(a);
  const u = new Uint32Array(f.buffer);
  u[1] += 3; // 3 float32 ULPs up
  const r = compareLane(seriesOf(steps, { loss: a }), seriesOf(steps, { loss: [...f] }), {
    lane: "exact",
    window: rangeWindow(21, 24),
  });
  assert.equal(r.verdict, "FAIL");
  assert.equal(r.max_ulp_f32, 3);
  assert.equal(r.max_ulp, 3 * 2 ** 29);
  assert.match(r.reason ?? "", /3\u00a0ULP\u00a0\(f32\) apart/);
});

Deno.test("compareLane() exact treats +0 and -0 as equal", () => {
  const r = compareLane(seriesOf([1, 2], { loss: [0, 1] }), seriesOf([1, 2], { loss: [-0, 1] }), {
    lane: "exact",
    window: rangeWindow(1, 2),
  });
  assert.equal(r.verdict, "PASS");
  assert.equal(r.max_ulp, 0);
});

Deno.test("compareLane() fails a step missing on one side, never skipping it", () => {
  const r = compareLane(
    seriesOf(steps, { loss: base }),
    seriesOf([21, 22, 24], { loss: [2.5, 2.4, 2.2] }),
    {
      lane: "tolerance",
      ...TOL,
      window: rangeWindow(21, 24),
      maxFailures: 5,
      names: ["a", "resume"],
    },
  );
  assert.equal(r.verdict, "FAIL", "no budget absorbs a missing step");
  assert.equal(r.missing_steps, 1);
  assert.equal(r.first_divergent_step, 23);
  assert.deepEqual(r.divergence, { step: 23, a: 2.3, b: null });
  assert.match(r.reason ?? "", /first fails at step 23 \(missing from resume\)/);
});

Deno.test("compareLane() fails a step whose metric is absent although the step exists", () => {
  const b = seriesOf(steps, { loss: [2.5, undefined, 2.3, 2.2] });
  const r = compareLane(seriesOf(steps, { loss: base }), b, {
    lane: "exact",
    window: rangeWindow(21, 24),
  });
  assert.equal(r.verdict, "FAIL");
  assert.equal(r.missing_steps, 1);
  assert.equal(r.first_divergent_step, 22);
});

Deno.test("compareLane() fails NaN and infinity on one side", () => {
  const a = seriesOf(steps, { loss: [2.5, Number.NaN, 2.3, 2.2] });
  const b = seriesOf(steps, { loss: [2.5, 2.4, 2.3, Number.POSITIVE_INFINITY] });
  const r = compareLane(a, b, { lane: "exact", window: rangeWindow(21, 24) });
  assert.equal(r.verdict, "FAIL");
  assert.equal(r.non_finite, 2);
  assert.deepEqual(r.divergence, { step: 22, a: null, b: 2.4 });
  assert.match(r.reason ?? "", /not finite \(a=NaN, b=2.4\)/);
});

Deno.test("compareLane() calls NaN or infinity on both sides ERROR (no evidence), never PASS", () => {
  const a = seriesOf(steps, { loss: [2.5, Number.NaN, 2.3, Number.POSITIVE_INFINITY] });
  const b = seriesOf(steps, { loss: [2.5, Number.NaN, 2.3, Number.POSITIVE_INFINITY] });
  for (const lane of ["exact", "tolerance"] as const) {
    const r = compareLane(a, b, { lane, ...TOL, window: rangeWindow(21, 24) });
    assert.equal(r.verdict, "ERROR");
    assert.equal(r.both_non_finite, 2);
    assert.equal(r.non_finite, 0);
    assert.match(r.reason ?? "", /NaN or infinite on both sides .*\(first: step 22\)/);
  }
  // A real divergence elsewhere still FAILs.
  const c = seriesOf(steps, { loss: [2.5, Number.NaN, 2.31, Number.POSITIVE_INFINITY] });
  assert.equal(compareLane(a, c, { lane: "exact", window: rangeWindow(21, 24) }).verdict, "FAIL");
});

Deno.test("compareLane() tolerance applies atol + rtol * |a| and the failure budget", () => {
  const a = seriesOf([1, 2, 3, 4], { loss: [1, 1, 1, 1] });
  const b = seriesOf([1, 2, 3, 4], { loss: [1.00005, 1.0002, 1.0003, 1] });
  const window = rangeWindow(1, 4);
  const within = compareLane(a, b, { lane: "tolerance", ...TOL, window, rtol: 1e-3 });
  assert.equal(within.verdict, "PASS");
  assert.equal(within.failures, 0);
  const budget = compareLane(a, b, {
    lane: "tolerance",
    ...TOL,
    window,
    rtol: 1e-4,
    maxFailures: 2,
  });
  assert.equal(budget.verdict, "PASS");
  assert.equal(budget.failures, 2);
  assert.equal(budget.first_divergent_step, 2);
  assert.match(budget.reason ?? "", /2 of 4 steps .* within the budget of 2/);
  const over = compareLane(a, b, { lane: "tolerance", ...TOL, window, rtol: 1e-4, maxFailures: 1 });
  assert.equal(over.verdict, "FAIL");
  const absolute = compareLane(a, b, { lane: "tolerance", ...TOL, window, rtol: 0, atol: 3e-4 });
  assert.equal(absolute.verdict, "PASS");
  assert.equal(absolute.rtol, 0);
  assert.equal(absolute.atol, 3e-4);
  assert.ok(Math.abs((absolute.max_rel ?? 0) - 3e-4) < 1e-12);
});

Deno.test("compareLane() is ERROR on an empty window", () => {
  const r = compareLane(seriesOf([1], { loss: [1] }), seriesOf([1], { loss: [1] }), {
    lane: "exact",
    window: rangeWindow(5, 4),
  });
  assert.equal(r.verdict, "ERROR");
  assert.equal(r.compared, 0);
  assert.match(r.reason ?? "", /window is empty/);
});

Deno.test("unionWindow() keeps every step either side logged the metric at", () => {
  const a = seriesOf([1, 2, 4], { loss: [1, 1, 1] });
  const b = seriesOf([2, 3, 5], { loss: [1, undefined, 1] });
  assert.deepEqual([...unionWindow(a, b)], [1, 2, 4, 5]);
  assert.deepEqual([...unionWindow(a, b, "loss", 2, 4)], [2, 4]);
  assert.deepEqual([...rangeWindow(3, 6)], [3, 4, 5, 6]);
});

Deno.test("compareLane() ULP distances hold for negative values and across zero", () => {
  const pairs: [number, number][] = [[-2.5, -2.5 - 4 * Number.EPSILON], [1e-320, -1e-320], [
    -1,
    0.5,
  ]];
  for (const [x, y] of pairs) {
    const r = compareLane(seriesOf([1], { loss: [x] }), seriesOf([1], { loss: [y] }), {
      lane: "exact",
      window: { from: 1, to: 1 },
    });
    assert.equal(r.max_ulp, ulpDistance64(x, y), `${x} vs ${y}`);
  }
});

Deno.test("compareLane() calls a step missing from both sides ERROR like NaN on both, never FAIL", () => {
  const a = seriesOf([21, 23, 24], { loss: [2.5, 2.3, 2.2] });
  const b = seriesOf([21, 23, 24], { loss: [2.5, 2.3, 2.2] });
  for (const lane of ["exact", "tolerance"] as const) {
    const r = compareLane(a, b, { lane, ...TOL, window: rangeWindow(21, 24) });
    assert.equal(r.verdict, "ERROR");
    assert.equal(r.both_missing, 1);
    assert.equal(r.missing_steps, 0);
    assert.match(
      r.reason ?? "",
      /missing from both sides at 1 of 4 window steps \(first: step 22\)/,
    );
  }
  // A step one side lacks still FAILs beside it.
  const c = seriesOf([21, 24], { loss: [2.5, 2.2] });
  const r = compareLane(a, c, { lane: "exact", window: rangeWindow(21, 24) });
  assert.equal(r.verdict, "FAIL");
  assert.equal(r.first_divergent_step, 23);
});
