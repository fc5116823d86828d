/**
 * Per-step difference of one comparison: `b − a` with a zero rule and, for exact lanes, a second
 * panel with the ULP distance (float32 ULPs for float32 values). The first divergent step is marked in red.
 *
 * @module
 */

import { ulpDistanceIn, type UlpUnit, ulpUnitOf } from "../parity/ulp.ts";
import { DEFAULT_MAX_POINTS, downsampleIndices } from "./downsample.ts";
import {
  type ChartSpec,
  CONFIG,
  finiteOrNull,
  HEIGHT,
  indexOfStep,
  SCHEMA_URL,
  symlogConstant,
  WIDTH,
} from "./_spec.ts";
import type { Series } from "./losses_table.ts";

/** Inputs of {@link differenceSpec}. */
export interface DifferenceInput {
  /** Comparison name (title). */
  name: string;
  /** Reference phase. */
  a: string;
  /** Candidate phase. */
  b: string;
  /** Metric compared. */
  metric: string;
  /** Lane: exact lanes get the ULP panel. */
  lane: "exact" | "tolerance" | "drift";
  /** Series of `a`. */
  seriesA: Series;
  /** Series of `b`. */
  seriesB: Series;
  /** Window first step (inclusive); null for all shared steps. */
  firstStep?: number | null;
  /** Window last step (inclusive). */
  lastStep?: number | null;
  /** Step to mark as the first divergence. */
  firstDivergentStep?: number | null;
  /** Display budget. */
  maxPoints?: number;
}

/** One aligned step of a comparison. */
export interface DifferenceRow {
  /** Step. */
  step: number;
  /** Value of `a`. */
  a: number;
  /** Value of `b`. */
  b: number;
  /** `b − a`. */
  diff: number;
  /** ULP distance, in the unit of {@link ulpUnitOfRows}. */
  ulp: number;
}

/** The ULP unit of aligned rows: float32 when every value on both sides is a float32. */
export function ulpUnitOfRows(rows: readonly DifferenceRow[]): UlpUnit {
  return ulpUnitOf(rows.flatMap((r) => [r.a, r.b]));
}

/**
 * Aligns two series on the steps both have, inside the window, and computes `b − a` and the
 * ULP distance (float32 ULPs when every value is a float32, else float64).
 */
export function alignDifference(
  seriesA: Series,
  seriesB: Series,
  firstStep?: number | null,
  lastStep?: number | null,
): DifferenceRow[] {
  const byStep = new Map<number, number>();
  for (let i = 0; i < seriesA.steps.length; i++) byStep.set(seriesA.steps[i], seriesA.values[i]);
  const rows: DifferenceRow[] = [];
  for (let i = 0; i < seriesB.steps.length; i++) {
    const step = seriesB.steps[i];
    if (firstStep !== null && firstStep !== undefined && step < firstStep) continue;
    if (lastStep !== null && lastStep !== undefined && step > lastStep) continue;
    const a = byStep.get(step);
    if (a === undefined) continue;
    const b = seriesB.values[i];
    rows.push({ step, a, b, diff: b - a, ulp: 0 });
  }
  const unit = ulpUnitOfRows(rows);
  for (const r of rows) r.ulp = ulpDistanceIn(unit, r.a, r.b);
  return rows;
}

/**
 * Builds the difference spec (pure; data inlined).
 *
 * @example
 * ```ts
 * import { differenceSpec } from "./difference.ts";
 * const spec = differenceSpec({
 *   name: "baseline~resume", a: "baseline", b: "resume", metric: "loss", lane: "exact",
 *   seriesA: { steps: [1, 2], values: [2, 1.5] },
 *   seriesB: { steps: [1, 2], values: [2, 1.25] },
 *   firstDivergentStep: 2,
 * });
 * Array.isArray(spec.vconcat); // true: the exact lane adds a ULP panel
 * ```
 */
export function differenceSpec(input: DifferenceInput): ChartSpec {
  const maxPoints = input.maxPoints ?? DEFAULT_MAX_POINTS;
  const rows = alignDifference(input.seriesA, input.seriesB, input.firstStep, input.lastStep);
  const unit = ulpUnitOfRows(rows);
  const steps = rows.map((r) => r.step);
  const keep = [indexOfStep(steps, input.firstDivergentStep)];
  // Exact lanes draw two panels from the same rows: split the budget between their extremes.
  const split = input.lane === "exact" && rows.length > maxPoints;
  const budget = split ? Math.floor(maxPoints / 2) : maxPoints;
  const idx = new Set(downsampleIndices(rows.map((r) => r.diff), budget, keep));
  if (split) {
    for (const i of downsampleIndices(rows.map((r) => r.ulp), budget, keep)) idx.add(i);
  }
  const shown = [...idx].sort((x, y) => x - y).map((i) => rows[i]);
  const values = shown.map((r) => ({
    step: r.step,
    a: finiteOrNull(r.a),
    b: finiteOrNull(r.b),
    diff: finiteOrNull(r.diff),
    ulp: finiteOrNull(r.ulp),
  }));
  const x = {
    field: "step",
    type: "quantitative",
    title: "optimizer step",
    axis: { tickMinStep: 1 },
  };
  const tooltip = [
    { field: "step", type: "quantitative" },
    { field: "a", type: "quantitative", format: ".17~g", title: input.a },
    { field: "b", type: "quantitative", format: ".17~g", title: input.b },
    { field: "diff", type: "quantitative", format: ".3~e", title: "b − a" },
    { field: "ulp", type: "quantitative", title: `ULP (${unit})` },
  ];
  const divergence = input.firstDivergentStep ?? null;
  // An all-zero series has an empty domain, which vega draws as a NaN axis: pin a small one.
  const identical = rows.length > 0 && rows.every((r) => r.diff === 0 && r.ulp === 0);
  const marker = (): ChartSpec[] =>
    divergence === null ? [] : [{
      data: { values: [{ step: divergence, label: `first divergence @ ${divergence}` }] },
      layer: [
        { mark: { type: "rule", color: "#d62728", strokeWidth: 1.5 }, encoding: { x } },
        {
          mark: {
            type: "text",
            align: "left",
            baseline: "top",
            dx: 4,
            dy: 4,
            y: 0,
            color: "#d62728",
          },
          encoding: { x, text: { field: "label" } },
        },
      ],
    }];
  const diffPanel: ChartSpec = {
    width: WIDTH,
    height: input.lane === "exact" ? Math.round(HEIGHT * 0.75) : HEIGHT,
    layer: [
      {
        data: { values: [{ zero: 0 }] },
        mark: { type: "rule", color: "#888" },
        encoding: { y: { field: "zero", type: "quantitative" } },
      },
      {
        data: { values },
        params: [{ name: "zoom_diff", select: "interval", bind: "scales" }],
        mark: {
          type: "line",
          point: values.length <= 200 ? { filled: true, color: "#1f77b4" } : false,
          color: "#1f77b4",
        },
        encoding: {
          x,
          y: {
            field: "diff",
            type: "quantitative",
            title: `b − a (${input.metric})`,
            ...(identical ? { scale: { domain: [-1, 1] } } : {}),
          },
          tooltip,
        },
      },
      ...marker(),
    ],
  };
  const title = {
    text: `${input.name}: ${input.metric} difference (${input.lane} lane)`,
    subtitle: [
      `b − a = ${input.b} − ${input.a}` +
      (identical ? `; identical at all ${rows.length} steps` : "") +
      (shown.length < rows.length ? `; display downsampled to about ${maxPoints} points` : ""),
    ],
  };
  const common = { $schema: SCHEMA_URL, title, config: CONFIG };
  if (input.lane !== "exact") return { ...common, ...diffPanel };
  const ulpPanel: ChartSpec = {
    width: WIDTH,
    height: Math.round(HEIGHT * 0.6),
    layer: [
      {
        data: { values },
        mark: {
          type: "line",
          point: values.length <= 200 ? { filled: true, color: "#ff7f0e" } : false,
          color: "#ff7f0e",
        },
        encoding: {
          x,
          y: {
            field: "ulp",
            type: "quantitative",
            title: `ULP distance (${unit})`,
            axis: { format: ".3~g" },
            scale: {
              type: "symlog",
              constant: symlogConstant(rows.map((r) => r.ulp)),
              ...(identical ? { domain: [0, 1] } : {}),
            },
          },
          tooltip,
        },
      },
      ...marker(),
    ],
  };
  return { ...common, vconcat: [diffPanel, ulpPanel] };
}
