import assert from "node:assert/strict";
import { bf16Bits, bf16Round, fromBf16Bits, roundToBf16Into, toBf16Bits } from "./bf16.ts";

Deno.test("bf16Round() rounds to nearest, ties to even", () => {
  assert.equal(bf16Round(1), 1);
  assert.equal(bf16Round(1 + 2 ** -8), 1); // tie, 1 is even
  assert.equal(bf16Round(1 + 3 * 2 ** -8), 1 + 2 ** -6); // tie, rounds up to even
  assert.equal(bf16Round(1 + 2 ** -8 + 2 ** -12), 1 + 2 ** -7); // above the tie
  assert.equal(bf16Round(-2.5), -2.5);
  assert.equal(bf16Round(Infinity), Infinity);
  assert.ok(Number.isNaN(bf16Round(NaN)));
  assert.equal(bf16Bits(1), 0x3f80);
  assert.equal(bf16Bits(-2), 0xc000);
});

Deno.test("toBf16Bits() and fromBf16Bits() agree with roundToBf16Into()", () => {
  const src = new Float32Array([0.1, -3.14159, 65504, 1e-30, 0, -0]);
  const rounded = new Float32Array(src.length);
  roundToBf16Into(src, rounded);
  assert.deepEqual(fromBf16Bits(toBf16Bits(src)), rounded);
  for (let i = 0; i < src.length; i++) assert.equal(rounded[i], bf16Round(src[i]));
});
