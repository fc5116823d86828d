import assert from "node:assert/strict";
import { ulp32 } from "../parity/lanes/drift.ts";
import { ulpDistance64 } from "../parity/lanes/ulp.ts";
import type { DriftSummary } from "../types/summary.ts";
import { alignDifference, differenceSpec, isIdentical } from "./difference.ts";
import { compilesCleanly, dataValues, type Json, marksOf, nodes, range } from "./_testing.ts";

const steps = range(21, 40);
const a = steps.map((s) => 2 / s);

Deno.test("alignDifference() computes b − a and the float64 ULP distance on shared steps", () => {
  const rows = alignDifference(
    { steps: [1, 2, 3, 4], values: [1, 1, 1, 1] },
    { steps: [2, 3, 4, 5], values: [1, 1 + Number.EPSILON, 0.5, 7] },
    2,
    4,
  );
  assert.deepEqual(rows.map((r) => r.step), [2, 3, 4]);
  assert.deepEqual(rows.map((r) => r.diff), [0, Number.EPSILON, -0.5]);
  assert.deepEqual(rows.map((r) => r.ulp), [0, 1, ulpDistance64(1, 0.5)]);
  assert.equal(isIdentical(rows), false);
  assert.equal(isIdentical(rows.slice(0, 1)), true);
  assert.equal(
    isIdentical(alignDifference({ steps: [1], values: [NaN] }, { steps: [1], values: [NaN] })),
    false,
    "NaN on both sides is no evidence of equality",
  );
});

Deno.test("differenceSpec() exact lane: b − a, then a ULP panel with few integer ticks", async () => {
  const b = steps.map((s, i) => (s >= 27 ? a[i] + 1e-6 * (s - 26) : a[i]));
  const spec: Json = differenceSpec({
    name: "baseline~resume",
    a: "baseline",
    b: "resume",
    metric: "loss",
    lane: "exact",
    seriesA: { steps, values: a },
    seriesB: { steps, values: b },
    firstStep: 21,
    lastStep: 40,
    firstDivergentStep: 27,
  });
  await compilesCleanly(spec);
  assert.equal(spec.vconcat.length, 2);
  const text = JSON.stringify(spec);
  assert.match(text, /ULP distance \(f64\)/);
  assert.match(text, /first divergence @ 27/);
  // The report reads the first panel's data layer (render_run_test): keep it where it was.
  const values = spec.vconcat[0].layer[1].data.values;
  const at27 = values.find((r: Json) => r.step === 27);
  assert.equal(at27.diff, b[6] - a[6]);
  assert.equal(at27.ulp, ulpDistance64(a[6], b[6]));
  assert.equal(values.find((r: Json) => r.step === 26).diff, 0);
  const ulpAxis = nodes(spec).find((n) => n.field === "ulp" && n.axis?.values).axis;
  assert.ok(ulpAxis.values.length <= 6, `${ulpAxis.values.length} ticks`);
  assert.ok(ulpAxis.values.every(Number.isInteger), ulpAxis.values.join(","));
  assert.ok(ulpAxis.values.at(-1) >= Math.max(...values.map((r: Json) => r.ulp)));
});

Deno.test("differenceSpec() tolerance lane: the allowed band and a log |b − a| panel without log(0)", async () => {
  const b = steps.map((s, i) => (s % 3 === 0 ? a[i] : a[i] * (1 + (s > 30 ? 3e-3 : 1e-4))));
  const spec: Json = differenceSpec({
    name: "baseline~resume",
    a: "baseline",
    b: "resume",
    metric: "grad_norm",
    lane: "tolerance",
    seriesA: { steps, values: a },
    seriesB: { steps, values: b },
    rtol: 1e-3,
    atol: 1e-9,
    firstDivergentStep: 31,
  });
  await compilesCleanly(spec);
  const logY = nodes(spec).find((n) => n.field === "abs" && n.scale?.type === "log");
  assert.ok(logY, "a log |b − a| axis");
  const rows = dataValues(spec).find((v) => v.length === 20 && "allowed" in v[0])!;
  for (const [i, r] of rows.entries()) {
    assert.equal(r.allowed, 1e-9 + 1e-3 * Math.abs(a[i]), `envelope at step ${r.step}`);
    // Exact zeros never reach the log axis.
    if (r.diff === 0) assert.equal(r.abs, null);
    assert.equal(r.outside, Math.abs(r.diff) > r.allowed);
  }
  assert.ok(rows.some((r: Json) => r.outside) && rows.some((r: Json) => !r.outside));
  const strip = marksOf(spec, "rect")[0];
  assert.deepEqual(
    strip.data.values.map((r: Json) => [r.from, r.to]),
    steps.filter((s) => s % 3 === 0).map((s) => [s, s]),
    "identical steps are in the strip",
  );
  assert.match(JSON.stringify(spec.title), /atol \+ rtol·\|a\| \(rtol 0\.001, atol 1e-9\)/);
});

Deno.test("differenceSpec() drift lane: early float32-ULP limit, then the envelope", () => {
  const drift: DriftSummary = {
    early_steps: 10,
    early_limit_ulp32: 16,
    early_max_ulp32: 3,
    envelope: 0.05,
    envelope_factor: 1,
    max_envelope_ratio: 0.1,
    bias_mean: 0,
    bias_t: 0,
    bias_limit: 5,
    bias_blocks: 0,
  };
  const spec = differenceSpec({
    name: "baseline~resume-reshard",
    a: "baseline",
    b: "resume-reshard",
    metric: "loss",
    lane: "drift",
    seriesA: { steps, values: a },
    seriesB: { steps, values: a.map((x) => x + 1e-6) },
    drift,
  });
  const rows = dataValues(spec).find((v) => v.length === 20 && "allowed" in v[0])!;
  assert.deepEqual(
    rows.slice(0, 10).map((r: Json) => r.allowed),
    a.slice(0, 10).map((x) => 16 * ulp32(x)),
  );
  assert.ok(rows.slice(10).every((r: Json) => r.allowed === 0.05));
});

Deno.test("differenceSpec() of a bit-identical pair says so, with no value axis", async () => {
  const spec: Json = differenceSpec({
    name: "baseline~resume-native",
    a: "baseline",
    b: "resume-native",
    metric: "loss",
    lane: "exact",
    seriesA: { steps, values: a },
    seriesB: { steps, values: [...a] },
  });
  await compilesCleanly(spec);
  assert.equal(spec.vconcat, undefined);
  assert.match(JSON.stringify(spec.title), /identical at all 20 steps \(21–40\)/);
  assert.deepEqual(spec.data.values.map((r: Json) => [r.kind, r.from, r.to]), [["b = a", 21, 40]]);
  assert.equal(
    spec.encoding.y.type,
    "nominal",
    "no quantitative value axis (no 0–1 axis with 0.2 ULP ticks)",
  );
  assert.ok(!nodes(spec).some((n) => n.field === "ulp" || n.field === "diff"));
});

Deno.test("differenceSpec() downsamples 10,000 steps and keeps the divergent step", () => {
  const long = range(1, 10_000);
  const x = long.map((s) => 1 / s);
  const spec = differenceSpec({
    name: "long",
    a: "a",
    b: "b",
    metric: "loss",
    lane: "exact",
    seriesA: { steps: long, values: x },
    seriesB: { steps: long, values: long.map((s, i) => (s >= 6543 ? x[i] * (1 + 1e-9) : x[i])) },
    firstDivergentStep: 6543,
    maxPoints: 1000,
  });
  const values = dataValues(spec).find((v) => v.length > 100)!;
  assert.ok(values.length <= 2010, `${values.length} points`);
  assert.ok(values.some((r: Json) => r.step === 6543));
});
