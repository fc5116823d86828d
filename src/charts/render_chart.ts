/**
 * Headless rendering: vega-lite spec → vega → SVG (renderer "none", no DOM) → PNG through
 * resvg-wasm with the DejaVu Sans font from the `dejavu-fonts-ttf` npm package, so text is drawn
 * identically on every machine. Text is laid out with that font's advance widths, so labels are not
 * cut or spaced by vega's canvas-less guess. Needs only read permission (for the wasm and the
 * font).
 *
 * @module
 */

import type * as VegaLite from "vega-lite";
import type * as Vega from "vega";
import { type ChartSpec, INTERACTIVE_ONLY } from "./_spec.ts";
import { readAdvanceWidths, vegaTextWidth } from "./_text_width.ts";

// The renderers load on first use: a run whose charts are all reused from the previous run
// (nothing changed) never pays for vega, vega-lite and resvg start-up.
let vl: typeof VegaLite;
let vega: typeof Vega;
let resvgModule: typeof import("@resvg/resvg-wasm");

async function loadRenderers(): Promise<void> {
  if (vega) return;
  [vl, vega, resvgModule] = await Promise.all([
    import("vega-lite"),
    import("vega"),
    import("@resvg/resvg-wasm"),
  ]);
}

/** Scale factor of PNG renders relative to the SVG's CSS pixels. */
const PNG_SCALE = 2;

let fontPromise: Promise<Uint8Array> | null = null;
let wasmPromise: Promise<void> | null = null;

async function readResolved(specifier: string): Promise<Uint8Array> {
  return await Deno.readFile(new URL(import.meta.resolve(specifier)));
}

/** The one font of every PNG (and of the text widths vega lays out with). */
const FONT = "dejavu-fonts-ttf/ttf/DejaVuSans.ttf";

let metricsPromise: Promise<void> | null = null;

/**
 * Makes vega lay text out with DejaVu Sans's real advance widths (once per process): without a
 * canvas it guesses 0.8 em per character, which truncates names that fit and inflates legends.
 */
function useFontMetrics(): Promise<void> {
  if (!metricsPromise) {
    metricsPromise = Promise.all([loadRenderers(), readResolved(FONT)]).then(([, font]) => {
      // vega's typings omit textMetrics; assigning its `width` is vega's documented hook.
      const metrics = (vega as unknown as { textMetrics: { width: unknown } }).textMetrics;
      metrics.width = vegaTextWidth(readAdvanceWidths(font));
    });
    metricsPromise.catch(() => (metricsPromise = null));
  }
  return metricsPromise;
}

/** Initialises resvg-wasm and loads the font, once per process. */
function ready(): Promise<Uint8Array> {
  if (!wasmPromise) {
    wasmPromise = Promise.all([readResolved("@resvg/resvg-wasm/index_bg.wasm"), loadRenderers()])
      .then(([bytes]) => resvgModule.initWasm(bytes));
    // A failed init must not poison later attempts with a cached rejection.
    wasmPromise.catch(() => (wasmPromise = null));
  }
  if (!fontPromise) {
    fontPromise = readResolved(FONT);
    fontPromise.catch(() => (fontPromise = null));
  }
  return wasmPromise.then(() => fontPromise!);
}

function collectingLogger(warnings: string[]) {
  let level = 0;
  const logger = {
    level(l?: number) {
      if (l === undefined) return level;
      level = l;
      return logger;
    },
    error(...args: unknown[]) {
      warnings.push(`error: ${args.join(" ")}`);
      return logger;
    },
    warn(...args: unknown[]) {
      warnings.push(args.join(" "));
      return logger;
    },
    info() {
      return logger;
    },
    debug() {
      return logger;
    },
  };
  return logger;
}

/**
 * The spec without its interactive-only parts: interval selections bound to scales (zoom/pan in
 * report.html) mean nothing in a static image, and they make vega-lite clip every mark, which
 * roughly doubles resvg's rasterising time; layers described as {@link INTERACTIVE_ONLY} (hover
 * rules, whose voronoi cells cost more to rasterise than the chart) are dropped.
 */
export function staticSpec(spec: ChartSpec): ChartSpec {
  const strip = (node: unknown): unknown => {
    if (Array.isArray(node)) {
      return node.filter((n) => (n as ChartSpec | null)?.description !== INTERACTIVE_ONLY)
        .map(strip);
    }
    if (node === null || typeof node !== "object") return node;
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === "params" && Array.isArray(value)) {
        const kept = value.filter((p) => (p as { bind?: unknown })?.bind !== "scales");
        if (kept.length > 0) out.params = strip(kept);
      } else out[key] = strip(value);
    }
    return out;
  };
  return strip(spec) as ChartSpec;
}

/**
 * Compiles a vega-lite spec to a vega spec.
 *
 * @param spec The vega-lite spec.
 * @param warnings Receives compiler warnings instead of the console.
 */
export async function compileSpec(spec: ChartSpec, warnings: string[] = []): Promise<Vega.Spec> {
  await loadRenderers();
  type Options = NonNullable<Parameters<typeof VegaLite.compile>[1]>;
  // vega tags inlined data rows in place; compile a copy so the caller's spec stays plain JSON.
  const compiled = vl.compile(structuredClone(spec) as unknown as VegaLite.TopLevelSpec, {
    logger: collectingLogger(warnings) as unknown as Options["logger"],
  });
  return compiled.spec as Vega.Spec;
}

/**
 * Renders a vega-lite spec to an SVG string.
 *
 * @example
 * ```ts
 * import { renderSvg } from "./render_chart.ts";
 * const svg = await renderSvg({ mark: "point", data: { values: [{ x: 1 }] },
 *   encoding: { x: { field: "x", type: "quantitative" } } });
 * svg.startsWith("<svg"); // true
 * ```
 */
export async function renderSvg(spec: ChartSpec, warnings: string[] = []): Promise<string> {
  await useFontMetrics();
  const compiled = await compileSpec(staticSpec(spec), warnings);
  const view = new vega.View(vega.parse(compiled), {
    renderer: "none",
    logger: collectingLogger(warnings) as unknown as Vega.LoggerInterface,
  });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/**
 * Rasterises an SVG to PNG bytes at `scale` times its size, with DejaVu Sans as the only font.
 */
export async function svgToPng(svg: string, scale: number = PNG_SCALE): Promise<Uint8Array> {
  const font = await ready();
  const resvg = new resvgModule.Resvg(
    svg,
    {
      fitTo: { mode: "zoom", value: scale },
      background: "white",
      font: {
        fontBuffers: [font],
        loadSystemFonts: false,
        defaultFontFamily: "DejaVu Sans",
        sansSerifFamily: "DejaVu Sans",
      },
    } as ConstructorParameters<typeof resvgModule.Resvg>[1],
  );
  try {
    const image = resvg.render();
    try {
      return image.asPng();
    } finally {
      image.free();
    }
  } finally {
    resvg.free();
  }
}

/** Paths of one written chart. */
export interface WrittenChart {
  /** Chart name (file stem). */
  name: string;
  /** `<dir>/<name>.vl.json`. */
  specPath: string;
  /** `<dir>/<name>.svg`. */
  svgPath: string;
  /** `<dir>/<name>.png`. */
  pngPath: string;
  /** Compiler/renderer warnings. */
  warnings: string[];
}

/** Options of {@link writeChart}. */
export interface WriteChartOptions {
  /**
   * Another charts folder (the previous run's): when it holds this chart with a byte-identical
   * spec, its SVG and PNG are copied instead of rendered again. A chart is a pure function of
   * its spec, so this never shows stale pictures.
   */
  reuseFrom?: string;
}

async function readTextIfExists(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(path);
  } catch {
    return undefined;
  }
}

/**
 * Writes `<dir>/<name>.vl.json`, `<name>.svg` and `<name>.png` (2x) for one spec, reusing an
 * identical earlier render in `dir` or `options.reuseFrom` when there is one.
 */
export async function writeChart(
  dir: string,
  name: string,
  spec: ChartSpec,
  options: WriteChartOptions = {},
): Promise<WrittenChart> {
  await Deno.mkdir(dir, { recursive: true });
  const specText = JSON.stringify(spec, null, 1) + "\n";
  const specPath = `${dir}/${name}.vl.json`;
  const svgPath = `${dir}/${name}.svg`;
  const pngPath = `${dir}/${name}.png`;
  for (const from of [dir, options.reuseFrom]) {
    if (!from || (await readTextIfExists(`${from}/${name}.vl.json`)) !== specText) continue;
    try {
      if (from !== dir) {
        await Deno.copyFile(`${from}/${name}.svg`, svgPath);
        await Deno.copyFile(`${from}/${name}.png`, pngPath);
        await Deno.writeTextFile(specPath, specText);
      } else {
        await Promise.all([Deno.stat(svgPath), Deno.stat(pngPath)]);
      }
      return { name, specPath, svgPath, pngPath, warnings: [] };
    } catch {
      // A half-present earlier render: render afresh.
    }
  }
  const warnings: string[] = [];
  const svg = await renderSvg(spec, warnings);
  const png = await svgToPng(svg);
  // The spec goes last, so an interrupted write never pairs a new spec with old pictures.
  await Promise.all([Deno.writeTextFile(svgPath, svg), Deno.writeFile(pngPath, png)]);
  await Deno.writeTextFile(specPath, specText);
  return { name, specPath, svgPath, pngPath, warnings };
}
