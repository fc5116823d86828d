/**
 * Charts of a parity run as vega-lite specs (pure builders, data inlined) and their headless
 * renders: SVG through vega (`renderer: "none"`) and PNG at 2x through resvg-wasm with the
 * DejaVu Sans font of the `dejavu-fonts-ttf` npm package.
 *
 * Charts: {@link lossOverlaySpec} (every phase, save-step rule, optional log scale, noise band),
 * {@link differenceSpec} (b − a per step, ULP panel for exact lanes, first divergence marked),
 * {@link planLoadSpec} (send/receive bytes per process and policy) and {@link historyTrendSpec}
 * (max abs over time, coloured by verdict). Long series are downsampled for display only
 * ({@link downsampleIndices}), keeping bucket extremes and the first divergent step.
 *
 * @example
 * ```ts ignore
 * import { lossOverlaySpec, writeChart } from "./mod.ts";
 * const spec = lossOverlaySpec({ title: "loss", series: [{ phase: "baseline", steps: [1, 2], values: [2, 1] }] });
 * await writeChart("out/charts", "loss", spec); // loss.vl.json, loss.svg, loss.png
 * ```
 *
 * @module
 */

export type { ChartSpec } from "./_spec.ts";
export {
  type BandPoint,
  DEFAULT_MAX_POINTS,
  downsampleBand,
  downsampleIndices,
} from "./downsample.ts";
export {
  type LossTable,
  parseLossesCsv,
  readLossesCsv,
  REPEAT_PREFIX,
  repeatPhases,
  type Series,
  seriesOf,
} from "./losses_table.ts";
export { type LossOverlayInput, lossOverlaySpec, type OverlaySeries } from "./loss_overlay.ts";
export {
  alignDifference,
  type DifferenceInput,
  type DifferenceRow,
  differenceSpec,
} from "./difference.ts";
export { type PlanLoadRow, planLoadRows, planLoadSpec } from "./plan_load.ts";
export { historyTrendSpec, type TrendPoint } from "./history_trend.ts";
export {
  buildRunCharts,
  chartSlug,
  type NamedChart,
  noiseBand,
  type RunChartsInput,
} from "./run_charts.ts";
export {
  compileSpec,
  PNG_SCALE,
  renderSvg,
  staticSpec,
  svgToPng,
  writeChart,
  type WriteChartOptions,
  type WrittenChart,
} from "./render_chart.ts";
