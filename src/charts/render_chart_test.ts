import assert from "node:assert/strict";
import { lossOverlaySpec } from "./loss_overlay.ts";
import { renderSvg, staticSpec, svgToPng, writeChart } from "./render_chart.ts";
import { darkPixels, decodePng } from "../../test/_testing/decode_png.ts";

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
});
