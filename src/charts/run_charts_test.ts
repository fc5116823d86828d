import assert from "node:assert/strict";
import { buildRunCharts, chartSlug, overlayDivergences } from "./run_charts.ts";
import { type Json, marksOf, nodes, quickstartMasterFromBf16 } from "./_testing.ts";

Deno.test("overlayDivergences() blames the reshard and the universal resume, once per step, never a plan resume", async () => {
  const { summary } = await quickstartMasterFromBf16();
  // Side b of the failing comparisons would name every resume-plan-* phase.
  assert.ok(
    summary.comparisons.some((c) => c.verdict === "FAIL" && c.b.startsWith("resume-plan-")),
  );
  assert.deepEqual(overlayDivergences(summary), [
    { step: 22, phases: ["resume-universal", "resume-reshard"] },
  ]);
});

Deno.test("buildRunCharts() quickstart overlay: one divergence rule and one label naming the culprits", async () => {
  const run = await quickstartMasterFromBf16();
  const loss = buildRunCharts(run).find((c) => c.name === "loss")!;
  const labels = marksOf(loss.spec, "text").flatMap((t) => {
    const parent = nodes(loss.spec).find((n) => Array.isArray(n.layer) && n.layer.includes(t));
    return (parent?.data?.values ?? []).map((v: Json) => v.label as string);
  }).filter((l: string) => l.startsWith("first divergence"));
  assert.deepEqual(labels, ["first divergence @ 22: resume-universal, resume-reshard"]);
  assert.doesNotMatch(labels.join(), /resume-plan/);
  // The three bit-identical plan resumes are one line and one legend entry.
  const legend = nodes(loss.spec).find((n) => n.field === "phase" && n.scale?.domain).scale.domain;
  assert.deepEqual(legend, [
    "baseline",
    "split",
    "resume-native",
    "resume-universal",
    "resume-reshard",
    "resume-plan-first_holder (= 2 more)",
  ]);
});

Deno.test("buildRunCharts() order: divergence, loss, failing diffs, the other diffs, plan-load", async () => {
  const run = await quickstartMasterFromBf16();
  const charts = buildRunCharts(run);
  const failing = run.summary.comparisons.filter((c) => c.verdict === "FAIL");
  const passing = run.summary.comparisons.filter((c) => c.verdict !== "FAIL");
  assert.deepEqual(charts.map((c) => c.name), [
    "divergence",
    "loss",
    ...failing.map((c) => `diff-${chartSlug(c.name)}`),
    ...passing.map((c) => `diff-${chartSlug(c.name)}`),
    "plan-load",
  ]);
  assert.equal(charts[2].name, "diff-baseline_resume-universal");
});

Deno.test("buildRunCharts() marks bit-identical PASS diffs as not informative, and nothing else", async () => {
  const run = await quickstartMasterFromBf16();
  const charts = buildRunCharts(run);
  const flat = charts.filter((c) => !c.informative).map((c) => c.comparison);
  assert.deepEqual(flat, [
    "baseline~resume-native",
    "resume-plan-first_holder~resume-plan-local_first_least_loaded",
    "resume-plan-first_holder~resume-plan-balanced",
    "resume-plan-local_first_least_loaded~resume-plan-balanced",
  ]);
  // A PASS drift lane with ULP-level differences still carries information.
  assert.equal(
    charts.find((c) => c.comparison === "baseline~resume-plan-balanced")!.informative,
    true,
  );
});

Deno.test("buildRunCharts() leaves the divergence chart out when every lane is exact and passes", async () => {
  const run = await quickstartMasterFromBf16();
  const clean = {
    ...run,
    summary: {
      ...run.summary,
      comparisons: run.summary.comparisons
        .filter((c) => c.name === "baseline~resume-native")
        .map((c) => ({ ...c })),
    },
  };
  const names = buildRunCharts(clean).map((c) => c.name);
  assert.deepEqual(names, ["loss", "diff-baseline_resume-native", "plan-load"]);
});
