/**
 * The layers of one loss-overlay panel: the noise band, the baseline, the other lines, the save
 * rule, the first-divergence markers and the hover rule. `lossOverlaySpec` stacks them.
 *
 * @module
 */

import { exact } from "../format/mod.ts";
import { bottomLegend, type ChartSpec, FAIL_COLOR, INTERACTIVE_ONLY, xZoom } from "./_spec.ts";

/** How the lines of an overlay are told apart. */
export interface LineStyle {
  /** Legend entries, the baseline first. */
  labels: string[];
  /** Legend entries drawing a culprit phase (drawn wider). */
  emphasised: string[];
  /** The colour encoding by legend entry. */
  color: ChartSpec;
}

/** Dash patterns by series index (the baseline, index 0, is drawn solid and wide). */
const DASHES = [[1, 0], [1, 0], [7, 3], [3, 2], [10, 2, 2, 2], [5, 5], [2, 4], [12, 3], [
  6,
  2,
  2,
  2,
]];

/** The noise-floor band (min–max across the baseline and its repeats). */
export function envelopeLayer(filter: ChartSpec[], x: ChartSpec, y: ChartSpec): ChartSpec {
  return {
    data: { name: "band" },
    transform: filter,
    mark: { type: "area", color: "#9e9e9e", fillOpacity: 0.35 },
    encoding: { x, y: { ...y, field: "lo" }, y2: { field: "hi" } },
  };
}

/** The baseline: wide and faint, underneath the others. */
export function baselineLayer(
  style: LineStyle,
  filter: ChartSpec[],
  x: ChartSpec,
  y: ChartSpec,
): ChartSpec {
  return {
    data: { name: "points" },
    transform: [...filter, { filter: { field: "phase", equal: style.labels[0] } }],
    mark: { type: "line", strokeWidth: 4, strokeOpacity: 0.45 },
    encoding: { x, y, color: style.color },
  };
}

/** Every other line, dashed apart unless dense, culprits wider; it holds the step zoom. */
export function seriesLayer(
  style: LineStyle,
  id: string,
  filter: ChartSpec[],
  x: ChartSpec,
  y: ChartSpec,
  dense: boolean,
): ChartSpec {
  const labels = style.labels;
  return {
    data: { name: "points" },
    transform: [...filter, { filter: { not: { field: "phase", equal: labels[0] } } }],
    params: [xZoom(`zoom_${id}`)],
    mark: { type: "line" },
    encoding: {
      x,
      y,
      color: style.color,
      // Different dashes let a line lying exactly on another show both colours; on a dense
      // zigzag they only blur it, so long windows draw solid lines.
      ...(dense ? {} : {
        strokeDash: {
          field: "phase",
          type: "nominal",
          title: null,
          scale: { domain: labels, range: labels.map((_, i) => DASHES[i % DASHES.length]) },
          legend: { ...bottomLegend(labels), symbolType: "stroke" },
        },
      }),
      strokeWidth: {
        condition: { test: { field: "phase", oneOf: style.emphasised }, value: 2.25 },
        value: 1.5,
      },
    },
  };
}

/** The dashed rule at the save step, labelled. */
export function saveRule(saveAt: number, x: ChartSpec): ChartSpec {
  return {
    data: { values: [{ step: saveAt, label: `save @ ${exact(saveAt)}` }] },
    layer: [
      { mark: { type: "rule", color: "#444", strokeDash: [5, 4] }, encoding: { x } },
      {
        mark: {
          type: "text",
          align: "right",
          baseline: "top",
          dx: -4,
          dy: 4,
          y: 0,
          color: "#444",
        },
        encoding: { x, text: { field: "label" } },
      },
    ],
  };
}

/** One red rule per first divergent step; `labelled`: with the culprits named beside it. */
export function divergenceMarkers(
  marks: readonly { step: number; phases: readonly string[] }[],
  x: ChartSpec,
  labelled: boolean,
): ChartSpec {
  return {
    data: {
      values: marks.map((m, i) => ({
        step: m.step,
        label: `first divergence @ ${exact(m.step)}: ${m.phases.join(", ")}`,
        // One line per distinct step, stacked from the top of the plot.
        y: 4 + 14 * i,
      })),
    },
    layer: [
      { mark: { type: "rule", color: FAIL_COLOR, strokeDash: [2, 2] }, encoding: { x } },
      // Labelled once, in the first panel: the rules alone say the same in the other.
      ...(labelled
        ? [{
          mark: { type: "text", align: "left", baseline: "top", dx: 4, color: FAIL_COLOR },
          encoding: {
            x,
            y: { field: "y", type: "quantitative", scale: null },
            text: { field: "label" },
          },
        }]
        : []),
    ],
  };
}

/** The hover rule: every series' value at the nearest step, as its tooltip. */
export function hoverLayer(id: string, filter: ChartSpec[], x: ChartSpec): ChartSpec {
  return {
    // Hover only: a static image has no pointer, and its voronoi cells would dominate the
    // PNG's rasterising time.
    description: INTERACTIVE_ONLY,
    data: { name: "hover" },
    transform: filter,
    params: [{
      name: `hover_${id}`,
      select: {
        type: "point",
        encodings: ["x"],
        nearest: true,
        on: "pointerover",
        clear: "pointerout",
      },
    }],
    // The whole row (every series' value at the step, preformatted) is the tooltip.
    mark: { type: "rule", color: "#555", tooltip: { content: "data" } },
    encoding: {
      x,
      opacity: { condition: { param: `hover_${id}`, value: 0.6, empty: false }, value: 0 },
    },
  };
}
