import assert from "node:assert/strict";
import { readAdvanceWidths, vegaTextWidth } from "./_text_width.ts";
import { lossOverlaySpec } from "./loss_overlay.ts";
import { rendersCleanly, svgTexts } from "./_testing.ts";

const font = await Deno.readFile(
  new URL(import.meta.resolve("dejavu-fonts-ttf/ttf/DejaVuSans.ttf")),
);

Deno.test("readAdvanceWidths() reads DejaVu Sans's own advance widths", () => {
  const widths = readAdvanceWidths(font);
  const em = (ch: string) => widths(ch.codePointAt(0)!);
  // DejaVu Sans: 'i' 0.278 em, 'W' 0.989 em, digits 0.636 em (from the font's hmtx table).
  assert.ok(Math.abs(em("i") - 0.278) < 0.002, `i: ${em("i")}`);
  assert.ok(Math.abs(em("W") - 0.989) < 0.002, `W: ${em("W")}`);
  for (const d of "0123456789") assert.equal(em(d), em("0"), "tabular digits");
  assert.ok(em("\u202f") > 0 && em("\u202f") < em(" ") + 0.1, "narrow no-break space is known");
  const width = vegaTextWidth(widths);
  const name = "resume-plan-local_first_least_loaded";
  // vega's canvas-less guess is 0.8 em per character: 317 px at 11 px, over the 260 px limit.
  assert.ok(width({ fontSize: 11 }, name) < 230, `${width({ fontSize: 11 }, name)} px`);
});

Deno.test("renderSvg() lays legends out with the font's widths, so long phase names are not cut", async () => {
  const steps = [1, 2, 3, 4];
  const names = [
    "baseline",
    "resume-plan-first_holder",
    "resume-plan-local_first_least_loaded",
    "resume-plan-balanced",
  ];
  const spec = lossOverlaySpec({
    title: "q",
    series: names.map((phase, i) => ({ phase, steps, values: steps.map((s) => 1 / s + i) })),
    saveAt: 2,
  });
  const texts = svgTexts(await rendersCleanly(spec));
  for (const name of names) assert.ok(texts.includes(name), `legend shows "${name}" whole`);
  assert.ok(!texts.some((t) => t.endsWith("…")), "nothing truncated");
});
