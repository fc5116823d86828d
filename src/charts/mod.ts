/**
 * The run's charts: Vega-Lite specs composed from named layers (loss overlay, difference and
 * divergence, plan load, history trend, the losses table) and their rendering to SVG and PNG.
 *
 * @module
 */

export { type ChartSpec } from "./_spec.ts";
export { DEFAULT_MAX_POINTS } from "./downsample.ts";
export { historyTrendSpec, type TrendPoint } from "./history_trend.ts";
export { type LossTable, parseLossesCsv, type Series, seriesOf } from "./losses_table.ts";
export { writeChart } from "./render_chart.ts";
export { buildRunCharts, type NamedChart } from "./run_charts.ts";
