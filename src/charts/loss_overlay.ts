/**
 * The loss overlay: the baseline and every other phase on one step axis, a rule at the save
 * step and, when repeated baselines were run, the noise-floor band (min/max across them).
 *
 * @module
 */

import {
  type BandPoint,
  DEFAULT_MAX_POINTS,
  downsampleBand,
  downsampleIndices,
} from "./downsample.ts";
import {
  type ChartSpec,
  CONFIG,
  finiteOrNull,
  HEIGHT,
  indexOfStep,
  SCHEMA_URL,
  WIDTH,
} from "./_spec.ts";

/** One line of the overlay. */
export interface OverlaySeries {
  /** Phase name (legend entry). */
  phase: string;
  /** Steps, ascending. */
  steps: number[];
  /** Values, one per step. */
  values: number[];
}

/** Inputs of {@link lossOverlaySpec}. */
export interface LossOverlayInput {
  /** Chart title. */
  title: string;
  /** Metric name for the y axis (default `loss`). */
  metric?: string;
  /** Lines, the baseline first (drawn wider, underneath). */
  series: OverlaySeries[];
  /** Step after which the split phase saved; drawn as a rule. */
  saveAt?: number | null;
  /** Noise-floor band, per step min/max across the baseline and its repeats. */
  band?: BandPoint[] | null;
  /** Logarithmic y axis. */
  logScale?: boolean;
  /** Display budget per series. */
  maxPoints?: number;
  /** Steps that must survive downsampling (first divergent steps). */
  keepSteps?: number[];
  /** First divergences to mark with a red rule, e.g. `{ step: 21, label: "resume-universal" }`. */
  divergences?: { step: number; label: string }[];
}

/**
 * Builds the loss-overlay vega-lite spec (pure: data inlined, nothing read).
 *
 * @example
 * ```ts
 * import { lossOverlaySpec } from "./loss_overlay.ts";
 * const spec = lossOverlaySpec({
 *   title: "quickstart: loss",
 *   series: [{ phase: "baseline", steps: [1, 2], values: [2.5, 2.4] }],
 *   saveAt: 1,
 * });
 * Array.isArray(spec.layer); // true
 * ```
 */
export function lossOverlaySpec(input: LossOverlayInput): ChartSpec {
  const maxPoints = input.maxPoints ?? DEFAULT_MAX_POINTS;
  const metric = input.metric ?? "loss";
  const marks = input.divergences ?? [];
  const keep = [
    ...(input.keepSteps ?? []),
    ...marks.map((m) => m.step),
    ...(input.saveAt ? [input.saveAt, input.saveAt + 1] : []),
  ];
  const phases = input.series.map((s) => s.phase);
  const points: { step: number; phase: string; value: number | null }[] = [];
  let downsampled = false;
  for (const s of input.series) {
    const idx = downsampleIndices(s.values, maxPoints, keep.map((k) => indexOfStep(s.steps, k)));
    if (idx.length < s.steps.length) downsampled = true;
    for (const i of idx) {
      points.push({ step: s.steps[i], phase: s.phase, value: finiteOrNull(s.values[i]) });
    }
  }
  const yScale = input.logScale ? { type: "log" } : { zero: false };
  const x = {
    field: "step",
    type: "quantitative",
    title: "optimizer step",
    axis: { tickMinStep: 1 },
  };
  const color = {
    field: "phase",
    type: "nominal",
    title: "phase",
    scale: { domain: phases, scheme: "tableau10" },
  };
  const layers: ChartSpec[] = [];
  const subtitle: string[] = [];
  if (input.band && input.band.length > 0) {
    const band = downsampleBand(input.band, maxPoints);
    layers.push({
      data: {
        values: band.map((p) => ({ step: p.step, lo: finiteOrNull(p.lo), hi: finiteOrNull(p.hi) })),
      },
      mark: { type: "area", color: "#9e9e9e", fillOpacity: 0.35 },
      encoding: {
        x,
        y: { field: "lo", type: "quantitative", scale: yScale, title: metric },
        y2: { field: "hi" },
      },
    });
    subtitle.push("grey band: noise floor (min–max of the baseline and its repeats)");
  }
  const base = phases[0];
  layers.push({
    data: { values: points },
    layer: [
      {
        transform: [{ filter: { field: "phase", equal: base } }],
        mark: { type: "line", strokeWidth: 4, strokeOpacity: 0.45 },
        encoding: {
          x,
          y: { field: "value", type: "quantitative", scale: yScale, title: metric },
          color,
        },
      },
      {
        transform: [{ filter: { not: { field: "phase", equal: base } } }],
        params: [{ name: "zoom", select: "interval", bind: "scales" }],
        mark: { type: "line", strokeWidth: 1.5 },
        encoding: {
          x,
          y: { field: "value", type: "quantitative", scale: yScale, title: metric },
          color,
          tooltip: [
            { field: "phase", type: "nominal" },
            { field: "step", type: "quantitative" },
            { field: "value", type: "quantitative", format: ".17~g" },
          ],
        },
      },
    ],
  });
  if (input.saveAt) {
    layers.push({
      data: { values: [{ step: input.saveAt, label: `save @ ${input.saveAt}` }] },
      layer: [
        { mark: { type: "rule", color: "#444", strokeDash: [5, 4] }, encoding: { x } },
        {
          mark: { type: "text", align: "left", baseline: "top", dx: 4, dy: 4, y: 0, color: "#444" },
          encoding: { x, text: { field: "label" } },
        },
      ],
    });
  }
  if (marks.length > 0) {
    layers.push({
      data: {
        values: marks.map((m, i) => ({
          step: m.step,
          label: `first divergence @ ${m.step}: ${m.label}`,
          row: i,
        })),
      },
      layer: [
        { mark: { type: "rule", color: "#d62728", strokeDash: [2, 2] }, encoding: { x } },
        {
          mark: { type: "text", align: "left", baseline: "bottom", dx: 4, color: "#d62728" },
          encoding: {
            x,
            y: { value: HEIGHT - 4 },
            yOffset: {
              field: "row",
              type: "quantitative",
              scale: { range: [0, -14 * marks.length] },
            },
            text: { field: "label" },
          },
        },
      ],
    });
  }
  if (downsampled) subtitle.push(`display downsampled to about ${maxPoints} points per line`);
  return {
    $schema: SCHEMA_URL,
    title: subtitle.length > 0 ? { text: input.title, subtitle } : input.title,
    width: WIDTH,
    height: HEIGHT,
    config: CONFIG,
    layer: layers,
  };
}
