import assert from "node:assert/strict";
import type { ComparisonSummary, PhaseSummary } from "../types/summary.ts";
import { divergenceSpec, INSET_STEPS, insetRange } from "./difference.ts";
import { divergencePanels } from "./divergence_panels.ts";
import { type Series, seriesOf } from "./losses_table.ts";
import { noiseBand } from "./run_charts.ts";
import {
  compilesCleanly,
  type Json,
  marksOf,
  nodes,
  quickstartMasterFromBf16,
  range,
  rowsOf,
} from "./_testing.ts";

function phase(name: string, role: PhaseSummary["role"]): PhaseSummary {
  return { name, role, status: "ok", cached: false, wall_s: 1, exit_code: 0 };
}

function comparison(
  a: string,
  b: string,
  lane: ComparisonSummary["lane"],
  verdict: ComparisonSummary["verdict"],
  step: number | null,
  extra: Partial<ComparisonSummary> = {},
): ComparisonSummary {
  return {
    name: `${a}~${b}`,
    a,
    b,
    metric: "loss",
    lane,
    verdict,
    first_step: 21,
    last_step: 40,
    compared: 20,
    first_divergent_step: step,
    last_matching_step: null,
    max_abs: 0,
    mean_abs: 0,
    max_rel: 0,
    max_ulp: 0,
    ...extra,
  };
}

Deno.test("divergencePanels() on the quickstart with a converter fault: one panel per culprit, plans merged", async () => {
  const { summary, losses } = await quickstartMasterFromBf16();
  const { panels, identical } = divergencePanels(summary, (p) => seriesOf(losses, p));
  assert.deepEqual(panels.map((p) => [p.label, p.culprit, p.comparison.name]), [
    ["resume-universal", true, "baseline~resume-universal"],
    ["resume-reshard", true, "baseline~resume-reshard"],
    ["resume-plan-first_holder (= 2 more)", false, "baseline~resume-plan-first_holder"],
  ]);
  assert.ok(
    panels.every((p) => p.culprit === !p.label.startsWith("resume-plan")),
    "no plan resume is blamed for the reshard's failure",
  );
  assert.deepEqual(identical, ["resume-native"]);
});

Deno.test("divergenceSpec() draws one row per culprit path with its header, rules and no log(0)", async () => {
  const { summary, losses } = await quickstartMasterFromBf16();
  const { panels, identical } = divergencePanels(summary, (p) => seriesOf(losses, p));
  const spec: Json = divergenceSpec({
    title: "quickstart",
    saveAt: summary.save_at,
    panels,
    identical,
    noise: noiseBand(losses),
  })!;
  await compilesCleanly(spec);
  assert.equal(spec.vconcat.length, 3, "one row per panel, not overplotted lines");
  const headers = spec.vconcat.map((row: Json) => row.title.text as string);
  assert.match(headers[0], /^resume-universal: FAIL, first divergence @ 22 — exact lane/);
  assert.match(headers[1], /^resume-reshard: FAIL, first divergence @ 22 — drift lane vs baseline/);
  assert.match(headers[1], /18\u202f156\u00a0ULP\u00a0\(f32\)/, "the table's ULP text");
  assert.equal(spec.vconcat[0].title.color, "#d62728");
  assert.notEqual(spec.vconcat[2].title.color, "#d62728");
  // The universal resume's step 21 is bit-identical: drawn in the strip, never at log(0).
  const universal = spec.datasets.panel_0 as Json[];
  assert.equal(universal.find((r) => r.step === 21).abs, null);
  assert.deepEqual(spec.datasets.strip_0.map((r: Json) => [r.from, r.to]), [[21, 21]]);
  for (const name of Object.keys(spec.datasets).filter((k) => k.startsWith("panel_"))) {
    assert.ok(spec.datasets[name].every((r: Json) => r.abs === null || r.abs > 0));
  }
  // The drift lane's envelope is drawn; the exact lane has none.
  const envelopeRows = (i: number) =>
    nodes(spec.vconcat[i]).filter((n) => n.encoding?.y?.field === "allowed");
  assert.ok(envelopeRows(1).length > 0);
  assert.equal(envelopeRows(0).length, 0);
  // Each rule's layer holds one row: the step it marks.
  const rules = marksOf(spec.vconcat[1], "rule").map((r) =>
    rowsOf(spec, nodes(spec.vconcat[1]).find((n) => n.layer?.includes(r)))[0].step
  );
  assert.deepEqual(rules.sort(), [20, 22], "save and first divergence");
});

Deno.test("divergenceSpec() draws the tolerance envelope atol + rtol·|a| and marks steps outside it", () => {
  const steps = range(21, 40);
  const a = steps.map((s) => 1 + 1 / s);
  const b = steps.map((s, i) => a[i] * (1 + (s >= 30 ? 1e-2 : 1e-5)));
  const series: Record<string, Series> = {
    baseline: { steps, values: a },
    "resume-native": { steps, values: b },
  };
  const cmp = comparison("baseline", "resume-native", "tolerance", "FAIL", 30, {
    rtol: 1e-3,
    atol: 1e-6,
  });
  const { panels } = divergencePanels(
    {
      phases: [phase("baseline", "baseline"), phase("resume-native", "resume")],
      comparisons: [cmp],
    },
    (p) => series[p],
  );
  const noise = steps.map((step) => ({ step, lo: 1, hi: 1 + (step % 2) * 1e-6 }));
  const spec: Json = divergenceSpec({ title: "t", saveAt: 20, panels, noise })!;
  const rows = spec.datasets.panel_0 as Json[];
  // The noise floor is the spread of the repeats; steps where they agree are not drawn.
  assert.deepEqual(
    spec.datasets.noise.map((p: Json) => p.step),
    steps.filter((s) => s % 2 === 1),
  );
  rows.forEach((r, i) => {
    assert.equal(r.allowed, 1e-6 + 1e-3 * Math.abs(a[i]));
    assert.equal(r.outside, steps[i] >= 30);
  });
  assert.ok(nodes(spec).some((n) => n.mark?.type === "area" && n.encoding?.y?.field === "allowed"));
});

Deno.test("divergenceSpec() is null when nothing failed and every lane is exact", () => {
  const steps = range(21, 40);
  const s = { steps, values: steps.map((x) => 1 / x) };
  const { panels, identical } = divergencePanels({
    phases: [phase("baseline", "baseline"), phase("resume-native", "resume")],
    comparisons: [comparison("baseline", "resume-native", "exact", "PASS", null)],
  }, () => s);
  assert.deepEqual(panels, []);
  assert.deepEqual(identical, ["resume-native"]);
  assert.equal(divergenceSpec({ title: "t", saveAt: 20, panels }), null);
});

Deno.test("insetRange() zooms from the save to the first divergence; long windows get the zoom column", async () => {
  assert.deepEqual(insetRange(1000, 1002, [1000, 2000]), [1000, 1002 + INSET_STEPS]);
  assert.deepEqual(insetRange(1000, 1500, [990, 2000]), [1480, 1520], "far: around the divergence");
  assert.equal(insetRange(null, 1002, [1, 2000]), null);

  const steps = range(1001, 2000);
  const a = steps.map((s) => 1 + Math.sin(s) / 10);
  const series: Record<string, Series> = {
    baseline: { steps, values: a },
    "resume-reshard": { steps, values: a.map((x, i) => (i === 0 ? x : x + 1e-4)) },
  };
  const cmp = comparison("baseline", "resume-reshard", "drift", "FAIL", 1002, {
    first_step: 1001,
    last_step: 2000,
    drift: {
      early_steps: 10,
      early_limit_ulp32: 16,
      early_max_ulp32: 800,
      envelope: 0.05,
      envelope_factor: 1,
      max_envelope_ratio: 0.01,
      bias_mean: 1e-4,
      bias_t: 0,
      bias_limit: 5,
      bias_blocks: 10,
    },
  });
  const phases = [phase("baseline", "baseline"), phase("resume-reshard", "resume")];
  const { panels } = divergencePanels({ phases, comparisons: [cmp] }, (p) => series[p]);
  const spec: Json = divergenceSpec({ title: "long", saveAt: 1000, panels })!;
  await compilesCleanly(spec);
  const columns = spec.vconcat[0].hconcat;
  assert.equal(columns.length, 2, "main and zoom column");
  const insetDomain = nodes(columns[1]).find((n) => n.field === "step" && n.scale).scale.domain;
  assert.deepEqual(insetDomain, [1000, 1007]);

  const short = divergenceSpec({
    title: "short",
    saveAt: 20,
    panels: divergencePanels({
      phases,
      comparisons: [{ ...cmp, first_step: 21, last_step: 40, first_divergent_step: 22 }],
    }, (p) => ({
      steps: range(21, 40),
      values: range(21, 40).map((s) => (p === "baseline" ? 1 / s : 1 / s + 1e-4)),
    })).panels,
  }) as Json;
  assert.equal(short.vconcat[0].hconcat.length, 1, "a 20-step window needs no zoom");
});
