import assert from "node:assert/strict";
import { ulpDistance64 } from "../parity/ulp.ts";
import type { PlanSyncSummary } from "../types/summary.ts";
import { alignDifference, differenceSpec } from "./difference.ts";
import { historyTrendSpec } from "./history_trend.ts";
import { lossOverlaySpec } from "./loss_overlay.ts";
import { planLoadRows, planLoadSpec } from "./plan_load.ts";
import { compileSpec } from "./render_chart.ts";
import type { ChartSpec } from "./_spec.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/** Every inline data array of a spec, depth first. */
function dataValues(spec: ChartSpec): Json[][] {
  const out: Json[][] = [];
  const walk = (node: Json) => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === "object") {
      if (node.data?.values) out.push(node.data.values);
      for (const [k, v] of Object.entries(node)) if (k !== "data") walk(v);
    }
  };
  walk(spec);
  return out;
}

async function compilesCleanly(spec: ChartSpec): Promise<void> {
  const warnings: string[] = [];
  await compileSpec(spec, warnings);
  assert.deepEqual(warnings, []);
}

const range = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);

Deno.test("lossOverlaySpec() draws every phase, the save rule, the noise band and a log axis", async () => {
  const spec = lossOverlaySpec({
    title: "quickstart: loss",
    series: [
      { phase: "baseline", steps: range(1, 40), values: range(1, 40).map((s) => 3 / s) },
      { phase: "resume-native", steps: range(21, 40), values: range(21, 40).map((s) => 3 / s) },
    ],
    saveAt: 20,
    band: range(1, 40).map((s) => ({ step: s, lo: 3 / s - 1e-3, hi: 3 / s + 1e-3 })),
    logScale: true,
    divergences: [{ step: 21, label: "resume-native" }],
  });
  await compilesCleanly(spec);
  const text = JSON.stringify(spec);
  assert.match(text, /"type":"log"/);
  assert.match(text, /"label":"save @ 20"/);
  assert.match(text, /first divergence @ 21: resume-native/);
  const [band, points] = dataValues(spec);
  assert.equal(band.length, 40);
  assert.deepEqual(Object.keys(band[0]).sort(), ["hi", "lo", "step"]);
  assert.equal(points.length, 60);
  assert.deepEqual(
    new Set(points.map((p: Json) => p.phase)),
    new Set(["baseline", "resume-native"]),
  );
});

Deno.test("lossOverlaySpec() downsamples 10,000 steps but keeps the divergent step", () => {
  const steps = range(1, 10_000);
  const spec = lossOverlaySpec({
    title: "long",
    series: [
      { phase: "baseline", steps, values: steps.map((s) => 5 / Math.sqrt(s) + 0.01 * Math.sin(s)) },
      {
        phase: "resume",
        steps: steps.slice(4999),
        values: steps.slice(4999).map((s) => 5 / Math.sqrt(s)),
      },
    ],
    saveAt: 5000,
    maxPoints: 2000,
    divergences: [{ step: 7321, label: "resume" }],
  });
  const points = dataValues(spec)[0];
  const baseline = points.filter((p: Json) => p.phase === "baseline");
  const resume = points.filter((p: Json) => p.phase === "resume");
  assert.ok(
    baseline.length <= 2005 && resume.length <= 2005,
    `${baseline.length}/${resume.length}`,
  );
  assert.ok(resume.some((p: Json) => p.step === 7321), "divergent step kept");
  assert.ok(baseline.some((p: Json) => p.step === 5000), "save step kept");
  assert.match(JSON.stringify(spec), /display downsampled/);
});

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
});

Deno.test("differenceSpec() adds a ULP panel for exact lanes and marks the first divergence", async () => {
  const steps = range(21, 40);
  const a = steps.map((s) => 2 / s);
  const b = steps.map((s, i) => (s >= 27 ? a[i] + 1e-6 * (s - 26) : a[i]));
  const exact = differenceSpec({
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
  await compilesCleanly(exact);
  assert.equal((exact.vconcat as Json[]).length, 2);
  const text = JSON.stringify(exact);
  assert.match(text, /ULP distance \(f64\)/);
  assert.match(text, /first divergence @ 27/);
  const values = dataValues(exact).find((v) => v.length === 20)!;
  const at27 = values.find((r: Json) => r.step === 27);
  assert.equal(at27.diff, b[6] - a[6]);
  assert.equal(at27.ulp, ulpDistance64(a[6], b[6]));
  assert.equal(values.find((r: Json) => r.step === 26).diff, 0);

  const tolerance = differenceSpec({
    name: "t",
    a: "baseline",
    b: "resume",
    metric: "grad_norm",
    lane: "tolerance",
    seriesA: { steps, values: a },
    seriesB: { steps, values: b },
  });
  await compilesCleanly(tolerance);
  assert.equal(tolerance.vconcat, undefined);
  assert.doesNotMatch(JSON.stringify(tolerance), /ULP distance/);
});

Deno.test("differenceSpec() downsamples 10,000 steps and keeps the divergent step", () => {
  const steps = range(1, 10_000);
  const a = steps.map((s) => 1 / s);
  const b = steps.map((s, i) => (s >= 6543 ? a[i] * (1 + 1e-9) : a[i]));
  const spec = differenceSpec({
    name: "long",
    a: "a",
    b: "b",
    metric: "loss",
    lane: "exact",
    seriesA: { steps, values: a },
    seriesB: { steps, values: b },
    firstDivergentStep: 6543,
    maxPoints: 1000,
  });
  const values = dataValues(spec).find((v) => v.length > 100)!;
  assert.ok(values.length <= 2010, `${values.length} points`);
  assert.ok(values.some((r: Json) => r.step === 6543));
});

Deno.test("planLoadSpec() groups send/receive bars per process and policy", async () => {
  const plans: PlanSyncSummary[] = [
    {
      policy: "first_holder",
      phase: "plan-a",
      verified: true,
      segments: 4,
      moved_bytes: 30,
      local_bytes: 0,
      max_process_bytes: 20,
      mean_process_bytes: 15,
      per_process: { "10": { send: 10, recv: 20 }, "2": { send: 20, recv: 10 } },
    },
    {
      policy: "no_loads",
      phase: "plan-b",
      verified: false,
      segments: 0,
      moved_bytes: 0,
      local_bytes: 0,
      max_process_bytes: 0,
      mean_process_bytes: 0,
    },
  ];
  assert.deepEqual(planLoadRows(plans), [
    { policy: "first_holder", process: "2", direction: "send", bytes: 20 },
    { policy: "first_holder", process: "2", direction: "receive", bytes: 10 },
    { policy: "first_holder", process: "10", direction: "send", bytes: 10 },
    { policy: "first_holder", process: "10", direction: "receive", bytes: 20 },
  ]);
  const spec = planLoadSpec("x", plans)!;
  await compilesCleanly(spec);
  assert.match(JSON.stringify(spec), /"xOffset"/);
  assert.equal(planLoadSpec("x", [plans[1]]), null);
});

Deno.test("historyTrendSpec() colours points by verdict with a fixed palette", async () => {
  const spec = historyTrendSpec([
    {
      time: "2026-11-28T02:00:00Z",
      experiment: "q",
      run_id: "r1",
      comparison: "c",
      verdict: "PASS",
      max_abs: 0,
      first_divergent_step: null,
    },
    {
      time: "2026-11-29T02:00:00Z",
      experiment: "q",
      run_id: "r2",
      comparison: "c",
      verdict: "FAIL",
      max_abs: 1e-6,
      first_divergent_step: 21,
    },
  ]);
  await compilesCleanly(spec);
  const text = JSON.stringify(spec);
  assert.match(text, /"domain":\["PASS","FAIL","ERROR","ABSTAIN"\],"range":\["#2ca02c","#d62728"/);
  assert.equal(dataValues(spec)[0].length, 2);
});
