import assert from "node:assert/strict";
import { bytes, comparisonUlpText, count, duration, exact, stat, ulps } from "./numbers.ts";

const NNBSP = "\u202f";
const NBSP = "\u00a0";

Deno.test("count() groups digits with a narrow no-break space, so a cell never wraps", () => {
  assert.equal(count(18156), `18${NNBSP}156`);
  assert.equal(count(-1234567), `-1${NNBSP}234${NNBSP}567`);
  assert.equal(count(999), "999");
  assert.equal(count(null), "—");
  assert.doesNotMatch(count(512441674891264), / /, "no breakable space");
});

Deno.test("bytes() uses binary units to 4 significant digits, exact below 1 KiB", () => {
  assert.deepEqual([0, 1023, 1024, 14592, 1536, 5 * 1024 ** 3].map(bytes), [
    `0${NBSP}B`,
    `1023${NBSP}B`,
    `1${NBSP}KiB`,
    `14.25${NBSP}KiB`,
    `1.5${NBSP}KiB`,
    `5${NBSP}GiB`,
  ]);
});

Deno.test("stat() keeps 4 significant digits; exact() keeps every digit", () => {
  assert.equal(stat(0.0017865896224975586), "0.001787");
  assert.equal(stat(1.4305114746e-6), "1.431e-6");
  assert.equal(stat(0), "0");
  assert.equal(exact(1.2509139776229858), "1.2509139776229858");
  assert.equal(duration(2.34), `2.3${NBSP}s`);
  assert.equal(duration(59.97), `1${NBSP}min${NBSP}00${NBSP}s`);
  assert.equal(duration(125), `2${NBSP}min${NBSP}05${NBSP}s`);
  assert.equal(duration(3720), `1${NBSP}h${NBSP}02${NBSP}min`);
});

Deno.test("comparisonUlpText() reports ULPs in the series' own precision", () => {
  assert.equal(
    comparisonUlpText({ max_ulp: 9747428278272, max_ulp_f32: 18156 }),
    ulps(18156, "f32"),
  );
  assert.equal(comparisonUlpText({ max_ulp: 12 }), `12${NBSP}ULP${NBSP}(f64)`);
  assert.equal(comparisonUlpText({ max_ulp: null }), "—");
});
