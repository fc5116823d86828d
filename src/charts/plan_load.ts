/**
 * Plan load per replica policy: bytes each process sends and receives, as grouped bars, one
 * panel per policy. The byte axis ticks at whole binary units and prints them as `bytes()` does
 * (`12 KiB`, as in the plan-sync table), and tooltips carry the same preformatted text.
 *
 * @module
 */

import { bytes } from "../format/mod.ts";
import type { PlanSyncSummary } from "../types/mod.ts";
import { BYTES_LABEL_EXPR, byteTicks } from "./_axis_labels.ts";
import { type ChartSpec, CONFIG, SCHEMA_URL } from "./_spec.ts";

/** One bar of the plan-load chart. */
export interface PlanLoadRow {
  /** Policy name. */
  policy: string;
  /** Process id. */
  process: string;
  /** `send` or `receive`. */
  direction: "send" | "receive";
  /** Bytes. */
  bytes: number;
}

/** Flattens `summary.plan_sync[].per_process` into bars (policies without loads are skipped). */
export function planLoadRows(plans: PlanSyncSummary[]): PlanLoadRow[] {
  const rows: PlanLoadRow[] = [];
  for (const plan of plans) {
    const loads = plan.per_process ?? {};
    const ids = Object.keys(loads).sort((x, y) => Number(x) - Number(y) || x.localeCompare(y));
    for (const id of ids) {
      rows.push({ policy: plan.policy, process: id, direction: "send", bytes: loads[id].send });
      rows.push({ policy: plan.policy, process: id, direction: "receive", bytes: loads[id].recv });
    }
  }
  return rows;
}

/**
 * Builds the plan-load spec, or null when no policy carries per-process loads.
 *
 * @example
 * ```ts
 * import { planLoadSpec } from "./plan_load.ts";
 * planLoadSpec("quickstart", []); // null
 * ```
 */
export function planLoadSpec(experiment: string, plans: PlanSyncSummary[]): ChartSpec | null {
  const rows = planLoadRows(plans);
  if (rows.length === 0) return null;
  const ticks = byteTicks(Math.max(...rows.map((r) => r.bytes)));
  return {
    $schema: SCHEMA_URL,
    title: {
      text: `${experiment}: plan load per policy`,
      subtitle: ["bytes each process sends to / receives from other processes"],
    },
    config: CONFIG,
    data: { values: rows.map((r) => ({ ...r, bytes_text: bytes(r.bytes) })) },
    facet: {
      column: {
        field: "policy",
        type: "nominal",
        title: "policy",
        sort: plans.map((p) => p.policy),
      },
    },
    spec: {
      width: { step: 22 },
      height: 220,
      mark: { type: "bar" },
      encoding: {
        x: {
          field: "process",
          type: "ordinal",
          title: "process",
          sort: null,
          axis: { labelAngle: 0 },
        },
        xOffset: { field: "direction", sort: ["send", "receive"] },
        y: {
          field: "bytes",
          type: "quantitative",
          title: "bytes",
          scale: { domain: [0, ticks[ticks.length - 1]], nice: false },
          axis: { values: ticks, labelExpr: BYTES_LABEL_EXPR },
        },
        color: {
          field: "direction",
          type: "nominal",
          title: "direction",
          scale: { domain: ["send", "receive"], range: ["#4c78a8", "#f58518"] },
        },
        tooltip: [
          { field: "policy", type: "nominal" },
          { field: "process", type: "nominal" },
          { field: "direction", type: "nominal" },
          { field: "bytes_text", type: "nominal", title: "bytes" },
        ],
      },
    },
  };
}
