import assert from "node:assert/strict";
import { isFloat32, ulpDistance32, ulpDistance64 } from "./ulp.ts";

function reference64(a: number, b: number): number {
  const ordered = (x: number) => {
    const bits = new BigInt64Array(new Float64Array([x]).buffer)[0];
    return bits < 0n ? -(bits & 0x7fffffffffffffffn) : bits;
  };
  const d = ordered(a) - ordered(b);
  return Number(d < 0n ? -d : d);
}

Deno.test("ulpDistance64() counts representable doubles, across zero and powers of two", () => {
  assert.equal(ulpDistance64(1, 1 + Number.EPSILON), 1);
  assert.equal(ulpDistance64(2, 2 - Number.EPSILON), 1, "just below a power of two");
  assert.equal(ulpDistance64(0, -0), 0);
  assert.equal(ulpDistance64(5e-324, -5e-324), 2);
  assert.equal(ulpDistance64(1, Number.NaN), Number.POSITIVE_INFINITY);
  assert.equal(ulpDistance64(1, Number.POSITIVE_INFINITY), Number.POSITIVE_INFINITY);
});

Deno.test("ulpDistance64() fast path equals the BigInt definition", () => {
  const samples = [0, -0, 1, -1, 2.5, 1e-300, -1e300, 3.14159, 1e-7, 2 ** 52, -2.4];
  for (const a of samples) {
    for (const b of samples) {
      assert.equal(ulpDistance64(a, b), reference64(a, b), `${a} vs ${b}`);
    }
  }
});

Deno.test("ulpDistance32() needs float32 values on both sides", () => {
  assert.equal(ulpDistance32(1, 1.1), null);
  const one = Math.fround(1);
  const next = new Float32Array(new Uint32Array([0x3f800001]).buffer)[0];
  assert.equal(ulpDistance32(one, next), 1);
  assert.ok(isFloat32(0.5));
  assert.ok(!isFloat32(0.1));
});
