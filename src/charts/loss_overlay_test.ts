import assert from "node:assert/strict";
import { chooseValueScale, collapseIdentical, lossOverlaySpec } from "./loss_overlay.ts";
import { compilesCleanly, type Json, marksOf, nodes, range } from "./_testing.ts";

const warmup = (s: number) => 4 / s + 0.5;

/** The y scales of the spec's value encodings (one per drawn line layer). */
function valueScales(spec: Json): Json[] {
  return nodes(spec).filter((n) => n.field === "value" && n.type === "quantitative").map((n) =>
    n.scale
  );
}

Deno.test("lossOverlaySpec() draws every phase, the save rule, the noise band and a forced log axis", async () => {
  const spec: Json = lossOverlaySpec({
    title: "quickstart: loss",
    series: [
      { phase: "baseline", steps: range(1, 40), values: range(1, 40).map((s) => 3 / s) },
      { phase: "resume-native", steps: range(21, 40), values: range(21, 40).map((s) => 3 / s) },
    ],
    saveAt: 20,
    band: range(1, 40).map((s) => ({ step: s, lo: 3 / s - 1e-3, hi: 3 / s + 1e-3 })),
    logScale: true,
    divergences: [{ step: 21, phases: ["resume-native"] }],
  });
  await compilesCleanly(spec);
  const text = JSON.stringify(spec);
  assert.ok(valueScales(spec).every((s) => s.type === "log"), "log forced in both panels");
  assert.match(text, /"label":"save @ 20"/);
  assert.match(text, /first divergence @ 21: resume-native/);
  assert.equal(spec.datasets.band.length, 40);
  assert.equal(spec.datasets.points.length, 60);
  assert.deepEqual(
    new Set(spec.datasets.points.map((p: Json) => p.phase)),
    new Set(["baseline", "resume-native"]),
  );
});

Deno.test("lossOverlaySpec() downsamples 10,000 steps but keeps the divergent and save steps", () => {
  const steps = range(1, 10_000);
  const spec: Json = lossOverlaySpec({
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
    divergences: [{ step: 7321, phases: ["resume"] }],
  });
  const points = spec.datasets.points as Json[];
  const baseline = points.filter((p) => p.phase === "baseline");
  const resume = points.filter((p) => p.phase === "resume");
  assert.ok(
    baseline.length <= 2005 && resume.length <= 2005,
    `${baseline.length}/${resume.length}`,
  );
  assert.ok(resume.some((p) => p.step === 7321), "divergent step kept");
  assert.ok(baseline.some((p) => p.step === 5000), "save step kept");
  assert.match(JSON.stringify(spec), /display downsampled/);
});

Deno.test("chooseValueScale() is log beyond three decades, linear within, symlog with values ≤ 0", () => {
  assert.equal(chooseValueScale(range(1, 40).map(warmup)), "linear"); // 4.5 → 0.6
  assert.equal(chooseValueScale([0.8, 1.2, 2.4e7]), "log");
  assert.equal(chooseValueScale([0.01, 9.99]), "linear"); // 999×: not more than three decades
  assert.equal(chooseValueScale([0.01, 10.01]), "log");
  assert.equal(chooseValueScale([-1, 0.5, 2e6]), "symlog");
  assert.equal(chooseValueScale([1, 2], true), "log", "charts.log_scale forces it");
  assert.equal(chooseValueScale([NaN, Infinity, 1, 2]), "linear", "non-finite values are gaps");
});

Deno.test("lossOverlaySpec() switches a panel to log only when its values span more than three decades", () => {
  const baseline = { phase: "baseline", steps: range(1, 60), values: range(1, 60).map(warmup) };
  const tame: Json = lossOverlaySpec({ title: "t", series: [baseline], saveAt: 30 });
  assert.ok(valueScales(tame).every((s) => s.type === undefined), "linear everywhere");
  const blowUp: Json = lossOverlaySpec({
    title: "b",
    series: [baseline, {
      phase: "resume-reshard",
      steps: range(31, 60),
      values: range(31, 60).map((s) => (s < 32 ? warmup(s) : 2.4e7 / (s % 5 + 1))),
    }],
    saveAt: 30,
  });
  const scales = valueScales(blowUp);
  assert.ok(scales.length > 0 && scales.every((s) => s.type === "log"), JSON.stringify(scales));
});

Deno.test("lossOverlaySpec() fits the post-save panel's value axis to the steps after the save", () => {
  const spec: Json = lossOverlaySpec({
    title: "q",
    series: [{ phase: "baseline", steps: range(1, 40), values: range(1, 40).map(warmup) }],
    saveAt: 20,
  });
  const [after, whole] = spec.vconcat as Json[];
  const domainOf = (view: Json) =>
    nodes(view).find((n) => n.field === "value" && n.scale?.domain).scale.domain;
  const [lo, hi] = domainOf(after);
  // Warm-up (4.5 at step 1) must not set the range: 0.6..0.73 is what the resumes live in.
  assert.ok(hi < 1 && lo > 0.5, `post-save domain ${lo}..${hi}`);
  assert.ok(domainOf(whole)[1] > 4, "the whole-run panel keeps the warm-up");
});

Deno.test("collapseIdentical() draws bit-identical phases once and keeps near-identical ones apart", () => {
  const steps = range(21, 40);
  const values = steps.map((s) => Math.fround(1 / s));
  const series = [
    { phase: "baseline", steps: range(1, 40), values: range(1, 40).map((s) => Math.fround(1 / s)) },
    { phase: "resume-plan-first_holder", steps, values },
    { phase: "resume-plan-local_first_least_loaded", steps, values: [...values] },
    { phase: "resume-plan-balanced", steps, values: [...values] },
    {
      phase: "resume-reshard",
      steps,
      values: values.map((v, i) => (i === 5 ? v * (1 + 1e-7) : v)),
    },
  ];
  const groups = collapseIdentical(series);
  assert.deepEqual(groups.map((g) => g.label), [
    "baseline",
    "resume-plan-first_holder (= 2 more)",
    "resume-reshard",
  ]);
  assert.deepEqual(groups[1].phases, [
    "resume-plan-first_holder",
    "resume-plan-local_first_least_loaded",
    "resume-plan-balanced",
  ]);
  const spec: Json = lossOverlaySpec({
    title: "q",
    series,
    saveAt: 20,
  });
  const legend = nodes(spec).find((n) => n.field === "phase" && n.scale?.domain).scale.domain;
  assert.deepEqual(legend, ["baseline", "resume-plan-first_holder (= 2 more)", "resume-reshard"]);
  assert.match(
    JSON.stringify(spec.title),
    /resume-plan-first_holder = resume-plan-local_first_least_loaded = resume-plan-balanced/,
  );
});

Deno.test("lossOverlaySpec() labels each distinct first divergent step once, with all its culprits", () => {
  const steps = range(1, 40);
  const spec: Json = lossOverlaySpec({
    title: "q",
    series: [{ phase: "baseline", steps, values: steps.map(warmup) }],
    saveAt: 20,
    divergences: [
      { step: 22, phases: ["resume-reshard", "resume-universal"] },
      { step: 25, phases: ["resume-native"] },
    ],
  });
  const labels = marksOf(spec, "text").flatMap((t) => {
    const parent = nodes(spec).find((n) => Array.isArray(n.layer) && n.layer.includes(t));
    return (parent?.data?.values ?? []).map((v: Json) => v.label as string);
  }).filter((l: string) => l.startsWith("first divergence"));
  assert.deepEqual(labels, [
    "first divergence @ 22: resume-reshard, resume-universal",
    "first divergence @ 25: resume-native",
  ]);
});

Deno.test("lossOverlaySpec() zooms the step axis only, and hovering shows every series at a step", async () => {
  const spec: Json = lossOverlaySpec({
    title: "q",
    series: [
      { phase: "baseline", steps: range(1, 40), values: range(1, 40).map(warmup) },
      { phase: "resume", steps: range(21, 40), values: range(21, 40).map(warmup) },
    ],
    saveAt: 20,
  });
  await compilesCleanly(spec);
  const params = nodes(spec).flatMap((n) => n.params ?? []);
  const zooms = params.filter((p: Json) => p.bind === "scales");
  assert.equal(zooms.length, 2, "one zoom per panel");
  for (const z of zooms) assert.deepEqual(z.select.encodings, ["x"]);
  const hovers = params.filter((p: Json) => p.select?.nearest);
  assert.equal(hovers.length, 2);
  const row = spec.datasets.hover.find((r: Json) => r.step === 21);
  assert.deepEqual(row, { step: 21, baseline: String(warmup(21)), resume: String(warmup(21)) });
  assert.match(spec.description, /double-click resets/);
});
