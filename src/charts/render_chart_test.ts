import assert from "node:assert/strict";
import { lossOverlaySpec } from "./loss_overlay.ts";
import { renderSvg, staticSpec, svgToPng, writeChart } from "./render_chart.ts";
import { darkPixels, decodePng } from "../../test/_testing/decode_png.ts";
import { historyTrendSpec } from "./history_trend.ts";
import { buildRunCharts } from "./run_charts.ts";
import { quickstartMasterFromBf16 } from "./_testing.ts";
import { INTERACTIVE_ONLY } from "./_spec.ts";

const spec = lossOverlaySpec({
  title: "Resume parity loss",
  series: [
    { phase: "baseline", steps: [1, 2, 3, 4], values: [2.5, 2.25, 2.125, 2] },
    { phase: "resume", steps: [3, 4], values: [2.125, 2.0625] },
  ],
  saveAt: 2,
});

Deno.test("renderSvg() draws the title, axis titles and legend as text", async () => {
  const warnings: string[] = [];
  const svg = await renderSvg(spec, warnings);
  assert.match(svg, /^<svg[^>]+width="\d+"/);
  for (const text of ["Resume parity loss", "optimizer step", "baseline", "resume", "save @ 2"]) {
    assert.ok(svg.includes(text), `SVG contains "${text}"`);
  }
  assert.deepEqual(warnings, []);
});

Deno.test("svgToPng() writes a decodable 2x PNG whose title text is drawn", async () => {
  const svg = await renderSvg(spec);
  const cssWidth = Number(svg.match(/width="(\d+(?:\.\d+)?)"/)![1]);
  const cssHeight = Number(svg.match(/height="(\d+(?:\.\d+)?)"/)![1]);
  const png = await svgToPng(svg);
  assert.deepEqual([...png.subarray(0, 8)], [137, 80, 78, 71, 13, 10, 26, 10]);
  const image = decodePng(png);
  assert.equal(image.width, Math.round(cssWidth * 2));
  assert.equal(image.height, Math.round(cssHeight * 2));
  // The title is the only thing in the top-left band: dark pixels there mean the font worked
  // (resvg-wasm without a font buffer draws no text at all).
  const titleInk = darkPixels(image, { x: 0, y: 0, width: 300, height: 36 });
  assert.ok(titleInk > 300, `title pixels drawn: ${titleInk}`);
  const blank = darkPixels(image, {
    x: image.width - 40,
    y: image.height - 10,
    width: 40,
    height: 10,
  });
  assert.equal(blank, 0, "bottom-right corner stays background");
});

Deno.test("writeChart() saves the spec, SVG and PNG side by side", async () => {
  const dir = await Deno.makeTempDir({ prefix: "parity_chart_" });
  try {
    const written = await writeChart(dir, "loss", spec);
    assert.deepEqual(JSON.parse(await Deno.readTextFile(written.specPath)), spec);
    assert.match(await Deno.readTextFile(written.svgPath), /^<svg/);
    const image = decodePng(await Deno.readFile(written.pngPath));
    assert.ok(image.width > 1000, `PNG is 2x: ${image.width}px wide`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("staticSpec() drops scale-bound zoom selections and keeps everything else", () => {
  const interactive = {
    layer: [
      { params: [{ name: "zoom", select: "interval", bind: "scales" }], mark: "line" },
      { params: [{ name: "pick", select: "point" }], mark: "point" },
    ],
  };
  assert.deepEqual(staticSpec(interactive), {
    layer: [{ mark: "line" }, { params: [{ name: "pick", select: "point" }], mark: "point" }],
  });
  assert.equal(interactive.layer[0].params.length, 1, "input untouched");
  const hover = { layer: [{ mark: "line" }, { description: INTERACTIVE_ONLY, mark: "rule" }] };
  assert.deepEqual(staticSpec(hover), { layer: [{ mark: "line" }] }, "hover layers dropped");
});

Deno.test("every chart of a real failing run renders to SVG and PNG without a vega warning", async () => {
  const { summary, losses } = await quickstartMasterFromBf16();
  const charts = buildRunCharts({ summary, losses });
  assert.deepEqual(charts.slice(0, 2).map((c) => c.name), ["divergence", "loss"]);
  for (const chart of charts) {
    const warnings: string[] = [];
    const svg = await renderSvg(chart.spec, warnings);
    assert.deepEqual(warnings, [], chart.name);
    // PNGs of the new and reworked layouts (the other diffs share the difference layout).
    if (["divergence", "loss", "plan-load", "diff-baseline_resume-native"].includes(chart.name)) {
      const image = decodePng(await svgToPng(svg));
      assert.ok(
        image.width > 600 && image.height > 100,
        `${chart.name}: ${image.width}x${image.height}`,
      );
    }
  }
  const divergence = await renderSvg(charts[0].spec);
  assert.match(divergence, /resume-reshard: FAIL, first divergence @ 22/);
});

Deno.test("the history trend renders to SVG and PNG without a vega warning", async () => {
  const point = (time: string, verdict: string, maxUlp: number | null) => ({
    time,
    experiment: "nightly-quickstart",
    run_id: time,
    comparison: "baseline~resume-universal",
    verdict,
    max_abs: maxUlp,
    first_divergent_step: null,
    max_ulp: maxUlp,
    ulp_unit: "f32" as const,
    href: "report.html",
  });
  const warnings: string[] = [];
  const svg = await renderSvg(
    historyTrendSpec([
      point("2026-11-28T02:00:00Z", "PASS", 0),
      point("2026-11-29T02:00:00Z", "FAIL", 2e8),
      point("2026-11-30T02:00:00Z", "PASS", 3),
    ]),
    warnings,
  );
  assert.deepEqual(warnings, []);
  assert.ok(decodePng(await svgToPng(svg)).width > 600);
});
