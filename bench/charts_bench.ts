/**
 * Chart and report rendering cost (target: ≤ 0.5 s per chart for a quickstart-sized run).
 *
 *   deno bench -A bench/charts_bench.ts
 *
 * Per-chart time = the "all charts" figure divided by the chart count printed at start-up.
 *
 * @module
 */

import { buildRunCharts } from "../src/charts/run_charts.ts";
import { writeChart } from "../src/charts/render_chart.ts";
import { loadRun } from "../src/report/load_run.ts";
import { renderRun } from "../src/report/render_run.ts";
import { makeFixtureRun } from "../test/_testing/run_fixture.ts";

const tmp = await Deno.makeTempDir({ prefix: "parity_charts_bench_" });
globalThis.addEventListener("unload", () => Deno.removeSync(tmp, { recursive: true }));

const quick = await makeFixtureRun(`${tmp}/quick`, { verdict: "FAIL", noisyRepeats: true });
const long = await makeFixtureRun(`${tmp}/long`, { verdict: "FAIL", steps: 10_000, saveAt: 5000 });

async function chartsOf(runDir: string) {
  const run = await loadRun(runDir);
  return buildRunCharts({
    summary: run.summary,
    losses: run.losses,
    metricSeries: run.series,
    logScale: run.logScale,
    maxPoints: run.maxPoints,
  });
}
const quickCharts = await chartsOf(quick.runDir);
const longCharts = await chartsOf(long.runDir);
console.log(
  `quickstart fixture: ${quickCharts.length} charts; 10,000-step fixture: ${longCharts.length} charts`,
);

// writeChart() reuses an identical earlier render in its folder, so every iteration renders
// into a fresh folder to measure real rendering.
let iteration = 0;
const fresh = (name: string) => `${tmp}/${name}-${iteration++}`;

// Warm the wasm, the font and the JIT once so the figures are steady-state.
await writeChart(`${tmp}/warm`, "warm", quickCharts[0].spec);

Deno.bench({
  name: `all ${quickCharts.length} charts of a quickstart run (40 steps): spec + SVG + 2x PNG`,
  group: "charts",
  baseline: true,
  async fn() {
    const dir = fresh("out-quick");
    for (const c of quickCharts) await writeChart(dir, c.name, c.spec);
  },
});

Deno.bench({
  name: `all ${longCharts.length} charts of a 10,000-step run (downsampled to 2000 points)`,
  group: "charts",
  async fn() {
    const dir = fresh("out-long");
    for (const c of longCharts) await writeChart(dir, c.name, c.spec);
  },
});

Deno.bench({
  name: "loss overlay only, quickstart",
  group: "single",
  async fn() {
    await writeChart(fresh("out-one"), "loss", quickCharts[0].spec);
  },
});

Deno.bench({
  name: "renderRun(): charts + report.md + report.html + junit.xml, quickstart",
  group: "run",
  async fn() {
    await Deno.remove(`${quick.runDir}/charts`, { recursive: true }).catch(() => {});
    await renderRun(quick.runDir);
  },
});

const previous = `${tmp}/previous`;
await Deno.mkdir(previous);
for (const c of quickCharts) await writeChart(`${previous}/charts`, c.name, c.spec);

Deno.bench({
  name: "all charts of an unchanged re-run: copied from the previous run, not rendered",
  group: "charts",
  async fn() {
    const dir = fresh("out-reuse");
    for (const c of quickCharts) {
      await writeChart(dir, c.name, c.spec, { reuseFrom: `${previous}/charts` });
    }
  },
});
