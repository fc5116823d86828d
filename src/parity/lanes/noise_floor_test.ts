import assert from "node:assert/strict";
import { seriesOf } from "../../../test/_testing/metrics_fixtures.ts";
import { NOISE_RTOL_RULE, TOLERANCE_DEFAULTS } from "../../types/defaults.ts";
import { deriveNoiseRtol, deriveRtol, measureNoiseFloor, SPREAD_LIMIT } from "./noise_floor.ts";

Deno.test("measureNoiseFloor() reports identical repeats and no repeats", () => {
  const base = seriesOf([1, 2, 3], { loss: [3, 2, 1] });
  assert.deepEqual(measureNoiseFloor(base, [], ["loss"]).summary, { repeats: 0, identical: true });
  const same = measureNoiseFloor(base, [{ name: "r1", series: base }], ["loss"]);
  assert.equal(same.summary.identical, true);
  assert.deepEqual(same.diagnostics, []);
});

Deno.test("measureNoiseFloor() takes the per-step max over repeats and metrics", () => {
  const base = seriesOf([1, 2, 3], { loss: [2, 2, 2], lr: [1, 1, 1] });
  const r1 = seriesOf([1, 2, 3], { loss: [2, 2.002, 2], lr: [1, 1, 1] });
  const r2 = seriesOf([1, 2, 3], { loss: [2, 2.0002, 2], lr: [1, 1, 1.5] });
  const { summary, diagnostics } = measureNoiseFloor(
    base,
    [{ name: "r1", series: r1 }, { name: "r2", series: r2 }],
    ["loss", "lr"],
  );
  assert.equal(summary.identical, false);
  assert.equal(summary.spread?.length, 2);
  assert.equal(summary.spread?.[0].step, 2);
  assert.ok(Math.abs((summary.spread?.[0].max_rel ?? 0) - 1e-3) < 1e-12);
  assert.equal(summary.spread?.[1].max_rel, 0.5);
  assert.equal(summary.max_rel_deviation, 0.5);
  assert.equal(diagnostics[0].code, "trainer-nondeterministic");
});

Deno.test("measureNoiseFloor() caps the spread list and warns about incomplete repeats", () => {
  const n = SPREAD_LIMIT + 5;
  const steps = Array.from({ length: n }, (_, i) => i + 1);
  const base = seriesOf(steps, { loss: steps.map(() => 1) });
  const noisy = seriesOf(steps.slice(0, n - 1), { loss: steps.slice(0, n - 1).map(() => 1.5) });
  const { summary, diagnostics } = measureNoiseFloor(base, [
    { name: "r1", series: noisy },
    { name: "r2" },
  ], ["loss"]);
  assert.equal(summary.spread?.length, SPREAD_LIMIT);
  assert.equal(summary.spread_truncated, true);
  const incomplete = diagnostics.filter((d) => d.code === "noise-floor-incomplete");
  assert.deepEqual(incomplete.map((d) => d.phase), ["r1", "r2"]);
});

Deno.test("deriveRtol() is max(max deviation x multiplier, floor)", () => {
  assert.equal(deriveRtol(0.01, 1.5, 1e-3), 0.015);
  assert.equal(deriveRtol(1e-7, 1.5, 1e-3), 1e-3);
});

Deno.test("deriveNoiseRtol() derives by default only from a non-identical floor", () => {
  const noisy = { repeats: 2, identical: false, max_rel_deviation: 3e-7 };
  assert.equal(deriveNoiseRtol({ repeats: 2, identical: true }, TOLERANCE_DEFAULTS), undefined);
  const derived = deriveNoiseRtol(noisy, TOLERANCE_DEFAULTS);
  assert.ok(Math.abs((derived?.rtol ?? 0) - 3e-6) < 1e-18);
  assert.deepEqual(derived?.derivation, { ...NOISE_RTOL_RULE, source: "default" });
  // A deviation below the float32 floor never gives a tighter tolerance than 8 ULPs.
  const tiny = deriveNoiseRtol({ ...noisy, max_rel_deviation: 9e-13 }, TOLERANCE_DEFAULTS);
  assert.equal(tiny?.rtol, 2 ** -20);
});

Deno.test("deriveNoiseRtol() under tolerance auto honours its multiplier and floor", () => {
  const auto = { auto: true as const, multiplier: 3, floor: 1e-3, atol: 0, max_failures: 0 };
  const identical = deriveNoiseRtol({ repeats: 0, identical: true }, auto);
  assert.deepEqual(identical, {
    rtol: 1e-3,
    derivation: { multiplier: 3, floor: 1e-3, source: "tolerance-auto" },
  });
  const noisy = { repeats: 1, identical: false, max_rel_deviation: 0.01 };
  assert.equal(deriveNoiseRtol(noisy, auto)?.rtol, 0.03);
});
