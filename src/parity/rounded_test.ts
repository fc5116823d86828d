import assert from "node:assert/strict";
import { isShortDecimal, looksRounded } from "./rounded.ts";

Deno.test("isShortDecimal() spots printed precision and passes computed floats", () => {
  for (const x of [2.3456, 12.3456, 0.12345, 123456.7, 1.5e-7, 0.0003]) {
    assert.ok(isShortDecimal(x), String(x));
  }
  for (const x of [2.7182818284590451, Math.fround(2.3456), 0.123456789, 1.2345678e-7]) {
    assert.ok(!isShortDecimal(x), String(x));
  }
  assert.ok(!isShortDecimal(Number.NaN));
});

Deno.test("looksRounded() needs every value short, two of them, and not all whole numbers", () => {
  assert.ok(looksRounded([2.3456, 2.2001, 2.1]));
  assert.ok(!looksRounded([2.3456, 2.2001, 2.718281828459045]));
  assert.ok(!looksRounded([2.3456]), "one value proves nothing");
  assert.ok(!looksRounded([120, 118, 97]), "counts are exact, not rounded");
  assert.ok(!looksRounded([2.5, 2.25], [1, 0]), "absent values are skipped");
  assert.ok(looksRounded([2.5, Number.NaN, 2.25]), "non-finite values are skipped");
});
