import assert from "node:assert/strict";
import { downsampleBand, downsampleIndices } from "./downsample.ts";

const wave = (n: number) => Array.from({ length: n }, (_, i) => Math.sin(i / 37) + i / n);

Deno.test("downsampleIndices() returns every index when the series fits", () => {
  assert.deepEqual(downsampleIndices([3, 1, 2], 2000), [0, 1, 2]);
});

Deno.test("downsampleIndices() bounds 10,000 points and keeps extremes, ends and kept steps", () => {
  const values = wave(10_000);
  values[4321] = 0.5; // an unremarkable value that must survive because it is the divergence
  values[7777] = 50; // a spike
  values[8888] = -50; // a dip
  const idx = downsampleIndices(values, 2000, [4321]);
  assert.ok(idx.length <= 2003, `${idx.length} points`);
  assert.ok(idx.length >= 1000, `${idx.length} points`);
  for (const must of [0, 4321, 7777, 8888, 9999]) assert.ok(idx.includes(must), `keeps ${must}`);
  assert.deepEqual(idx, [...idx].sort((a, b) => a - b));
  assert.equal(new Set(idx).size, idx.length);
});

Deno.test("downsampleIndices() keeps a NaN so a broken step stays visible", () => {
  const values = wave(10_000);
  values[5000] = Number.NaN;
  assert.ok(downsampleIndices(values, 500).includes(5000));
});

Deno.test("downsampleBand() covers every original point with fewer points", () => {
  const band = Array.from(
    { length: 10_000 },
    (_, i) => ({ step: i + 1, lo: -Math.abs(Math.sin(i)), hi: Math.abs(Math.cos(i)) }),
  );
  const small = downsampleBand(band, 400);
  assert.ok(small.length <= 400, `${small.length}`);
  const lo = Math.min(...band.map((p) => p.lo));
  const hi = Math.max(...band.map((p) => p.hi));
  assert.equal(Math.min(...small.map((p) => p.lo)), lo);
  assert.equal(Math.max(...small.map((p) => p.hi)), hi);
  assert.equal(small[0].step, 1);
  assert.equal(small.at(-1)!.step, 10_000);
});
