import assert from "node:assert/strict";
import { isShortDecimal, looksRounded, roundedSides, roundingBound } from "./rounded.ts";

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

Deno.test("roundedSides() finds a side written coarser than the other, and both short sides", () => {
  const full = { values: [2.718281828459045, 2.6931471805599454, 2.577215664901533] };
  const eight = { values: full.values.map((x) => Number(x.toFixed(8))) };
  const four = { values: full.values.map((x) => Number(x.toFixed(4))) };
  assert.deepEqual(roundedSides(full, full), [null, null]);
  assert.deepEqual(roundedSides(full, eight), [null, { decimals: 8, significant: 9 }]);
  assert.deepEqual(roundedSides(eight, eight), [null, null], "equal precision compares exactly");
  assert.deepEqual(roundedSides(four, four), [
    { decimals: 4, significant: 5 },
    { decimals: 4, significant: 5 },
  ]);
});

Deno.test("roundingBound() covers the rounding error of its side and nothing for a full side", () => {
  assert.deepEqual(roundingBound(null), { atol: 0, rtol: 0 });
  const { atol, rtol } = roundingBound({ decimals: 4, significant: 5 });
  const x = 2.718281828459045;
  const error = Math.abs(Number(x.toFixed(4)) - x);
  assert.ok(error <= atol + rtol * x);
  assert.ok(1e-3 > atol + rtol * x, "a difference in the 3rd decimal is beyond it");
});
