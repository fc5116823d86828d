import assert from "node:assert/strict";
import { seriesOf } from "../../../test/_testing/metrics_fixtures.ts";
import { DRIFT_DEFAULTS } from "../../types/defaults.ts";
import { biasBlocks, compareDrift, medianStepChange, ulp32 } from "./drift.ts";
import { driftOptions } from "../evaluate.ts";

/** The drift lane as a run without a `drift:` block resolves it. */
const drift = driftOptions(DRIFT_DEFAULTS);

/** A noisy loss curve over steps 1..n (deterministic). */
function curve(n: number): { steps: number[]; loss: number[] } {
  const steps: number[] = [];
  const loss: number[] = [];
  let s = 12345;
  for (let k = 1; k <= n; k++) {
    s = (s * 1103515245 + 12345) % 2147483648;
    steps.push(k);
    loss.push(Math.fround(0.8 + 0.05 * (s / 2147483648 - 0.5)));
  }
  return { steps, loss };
}

/** `b` = `a` plus a difference growing from ULPs (like reduction-order chaos), sign alternating. */
function drifted(loss: number[], from: number, bias = 0): number[] {
  return loss.map((x, i) => {
    if (i < from) return x;
    const k = i - from;
    const size = Math.min(ulp32(x) * Math.pow(1.15, Math.max(0, k - 20)), 4e-4);
    const sign = (i * 7919) % 3 === 0 ? 1 : -1;
    return Math.fround(x + (k < 10 ? 0 : sign * size) + (k >= 10 ? bias : 0));
  });
}

Deno.test("ulp32() is the float32 spacing", () => {
  assert.equal(ulp32(1), Math.pow(2, -23));
  assert.equal(ulp32(0.75), Math.pow(2, -24));
  assert.equal(ulp32(-3), Math.pow(2, -22));
  assert.equal(medianStepChange([1, 2, 4, 7]), 2);
});

Deno.test("compareDrift() passes growing drift that saturates and averages to zero", () => {
  const { steps, loss } = curve(400);
  const r = compareDrift(seriesOf(steps, { loss }), seriesOf(steps, { loss: drifted(loss, 200) }), {
    window: { from: 201, to: 400 },
    drift,
  });
  assert.equal(r.verdict, "PASS", r.reason);
  assert.equal(r.lane, "drift");
  assert.equal(r.drift?.bias_blocks, 10);
  assert.match(r.reason ?? "", /drifts like reduction-order noise/);
});

Deno.test("compareDrift() fails an early jump at N+2 by orders of magnitude", () => {
  const { steps, loss } = curve(400);
  const b = drifted(loss, 200);
  b[201] = Math.fround(b[201] + 1e-4); // step 202
  const r = compareDrift(seriesOf(steps, { loss }), seriesOf(steps, { loss: b }), {
    window: { from: 201, to: 400 },
    drift,
  });
  assert.equal(r.verdict, "FAIL");
  assert.equal(r.first_divergent_step, 202);
  assert.equal(r.last_matching_step, 201);
  assert.match(r.reason ?? "", /early window/);
});

Deno.test("compareDrift() fails a persistent bias the early window cannot see", () => {
  const { steps, loss } = curve(400);
  const b = drifted(loss, 200, -3e-4);
  const r = compareDrift(seriesOf(steps, { loss }), seriesOf(steps, { loss: b }), {
    window: { from: 201, to: 400 },
    drift,
  });
  assert.equal(r.verdict, "FAIL", JSON.stringify(r.drift));
  assert.match(r.reason ?? "", /persistent bias/);
  assert.ok(Math.abs(r.drift!.bias_t) > 5);
  assert.equal(r.first_divergent_step, 211);
});

Deno.test("compareDrift() fails a difference beyond the loss's own step noise", () => {
  const { steps, loss } = curve(400);
  const b = drifted(loss, 200);
  b[300] = b[300] + 0.2;
  const r = compareDrift(seriesOf(steps, { loss }), seriesOf(steps, { loss: b }), {
    window: { from: 201, to: 400 },
    drift,
  });
  assert.equal(r.verdict, "FAIL");
  assert.equal(r.first_divergent_step, 301);
  assert.match(r.reason ?? "", /drift envelope/);
});

Deno.test("compareDrift() fails missing steps and skips the bias test under 20 long-window steps", () => {
  const { steps, loss } = curve(40);
  const b: (number | undefined)[] = [...loss];
  b[30] = undefined;
  const missing = compareDrift(seriesOf(steps, { loss }), seriesOf(steps, { loss: b }), {
    window: { from: 21, to: 40 },
    drift,
  });
  assert.equal(missing.verdict, "FAIL");
  assert.equal(missing.first_divergent_step, 31);
  const short = compareDrift(seriesOf(steps, { loss }), seriesOf(steps, { loss }), {
    window: { from: 21, to: 40 },
    drift,
  });
  assert.equal(short.verdict, "PASS");
  assert.equal(short.drift?.bias_blocks, 0);
  assert.match(short.reason ?? "", /bias test skipped \(the long window is under 20 steps\)/);
});

Deno.test("biasBlocks() cuts short long windows into blocks of 4+ steps at a raised |t| limit", () => {
  assert.deepEqual(biasBlocks(100, drift), { blocks: 10, limit: 5 });
  assert.deepEqual(biasBlocks(40, drift), { blocks: 10, limit: 5 });
  const five = biasBlocks(20, drift);
  assert.equal(five.blocks, 5);
  assert.ok(Math.abs(five.limit - 9.3158) < 1e-3, String(five.limit));
  assert.equal(biasBlocks(33, drift).blocks, 8);
  assert.equal(biasBlocks(19, drift).blocks, 0);
});

Deno.test("compareDrift() runs the bias test on the seed experiment's 40-step long window", () => {
  // 100 steps, save at 50: 10 early steps, then 40 in 10 blocks of 4.
  const { steps, loss } = curve(100);
  const window = { from: 51, to: 100 };
  const a = seriesOf(steps, { loss });
  const clean = compareDrift(a, seriesOf(steps, { loss: drifted(loss, 50) }), { window, drift });
  assert.equal(clean.verdict, "PASS", clean.reason);
  assert.equal(clean.drift?.bias_blocks, 10);
  const biased = compareDrift(a, seriesOf(steps, { loss: drifted(loss, 50, -3e-4) }), {
    window,
    drift,
  });
  assert.equal(biased.verdict, "FAIL", JSON.stringify(biased.drift));
  assert.equal(biased.drift?.failure?.test, "bias");
  assert.equal(biased.drift?.failure?.blocks, 10);
});

Deno.test("compareDrift() widens the early bound to a measured noise floor (earlyRel)", () => {
  const { steps, loss } = curve(40);
  const b = loss.map((x, i) => (i >= 20 ? x * (1 + 2e-6 * (i % 2 ? 1 : -1)) : x));
  const window = { from: 21, to: 40 };
  const a = seriesOf(steps, { loss });
  assert.equal(compareDrift(a, seriesOf(steps, { loss: b }), { window, drift }).verdict, "FAIL");
  const noisy = compareDrift(a, seriesOf(steps, { loss: b }), {
    window,
    drift: { ...drift, earlyRel: 3e-6 },
  });
  assert.equal(noisy.verdict, "PASS", noisy.reason);
});
