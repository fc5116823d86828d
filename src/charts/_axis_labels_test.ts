import assert from "node:assert/strict";
import { bytes, count, stat } from "../format/numbers.ts";
import {
  BYTES_LABEL_EXPR,
  byteTicks,
  decadeDomain,
  decadeTicks,
  lookupLabelExpr,
  STAT_LABEL_EXPR,
  ulpTicks,
} from "./_axis_labels.ts";
import { rendersCleanly, svgTexts } from "./_testing.ts";

/** The labels vega draws for `values` on an axis with `labelExpr`. */
async function drawnLabels(values: number[], labelExpr: string): Promise<string[]> {
  const svg = await rendersCleanly({
    width: 600,
    height: 40,
    data: { values: values.map((v) => ({ v })) },
    mark: "tick",
    encoding: {
      x: {
        field: "v",
        type: "quantitative",
        title: null,
        scale: { type: "symlog", domain: [Math.min(...values), Math.max(...values)] },
        axis: { values, labelExpr, labelOverlap: false },
      },
    },
  });
  return svgTexts(svg);
}

Deno.test("decadeDomain() and decadeTicks() give whole decades and few ticks, the top one kept", () => {
  assert.deepEqual(decadeDomain([1.19e-7, 0, null, 0.0017]), [1e-7, 1e-2]);
  assert.deepEqual(decadeDomain([1e-3]), [1e-4, 1e-2], "a power of ten gets a decade each side");
  assert.equal(decadeDomain([0, NaN, -1, Infinity]), null);
  assert.deepEqual(decadeTicks([1e-8, 1e8], 6), [1e-7, 1e-4, 0.1, 100, 1e5, 1e8]);
  assert.deepEqual(decadeTicks([1e-7, 1e-2], 6), [1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2]);
});

Deno.test("ulpTicks() are few integers from 0; byteTicks() are whole binary units", () => {
  assert.deepEqual(ulpTicks(18_156), [0, 10, 1000, 100_000]);
  const wide = ulpTicks(2e8);
  assert.ok(wide.length <= 6 && wide.every(Number.isInteger), wide.join(","));
  assert.ok(wide.at(-1)! >= 2e8);
  assert.deepEqual(ulpTicks(0), [0, 1], "identical: one ULP of headroom, not 0.2 ULP ticks");
  assert.deepEqual(byteTicks(14_592), [0, 4096, 8192, 12_288, 16_384]);
  assert.deepEqual(byteTicks(900), [0, 200, 400, 600, 800, 1000]);
  assert.deepEqual(byteTicks(3 * 1024 ** 3).at(-1), 3 * 1024 ** 3);
});

Deno.test("STAT_LABEL_EXPR and BYTES_LABEL_EXPR draw exactly what stat() and bytes() print", async () => {
  const stats = [-0.00123456, -2.5e-7, 0, 1e-7, 1.5e-7, 0.001, 0.0012345, 0.5, 123456, 2.4e7];
  assert.deepEqual(await drawnLabels(stats, STAT_LABEL_EXPR), stats.map((v) => stat(v)));
  const sizes = [0, 512, 1023, 1024, 6_336, 14_592, 1_048_576, 5.5 * 1024 ** 3, 2 * 1024 ** 5];
  assert.deepEqual(await drawnLabels(sizes, BYTES_LABEL_EXPR), sizes.map((v) => bytes(v)));
  const ulps = [0, 1, 10, 18_156, 100_000];
  assert.deepEqual(
    await drawnLabels(ulps, lookupLabelExpr(ulps, count)),
    ulps.map((v) => count(v)),
  );
});
