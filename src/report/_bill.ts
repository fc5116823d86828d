/**
 * The report's "Cost" lines: what the verdict cost, from summary.json's `bill` and the phases
 * it reused from other experiments (`shared_from`). Display only.
 *
 * @module
 */

import { basename } from "node:path";
import type { BillSaving, RunSummary } from "../types/mod.ts";

/** `40 step-equivalents, 12.3 device-seconds` (device-seconds where the summary has them). */
function savedText(saving: BillSaving): string {
  return `${saving.step_equivalents} step-equivalents` +
    (saving.device_seconds !== undefined
      ? `, ${saving.device_seconds.toFixed(1)} device-seconds`
      : "");
}

/** Sentences of the cost section; empty for a summary without a bill (an older run). */
export function billSentences(s: RunSummary): string[] {
  const b = s.bill;
  if (!b) return [];
  const lines = [
    `${b.step_equivalents} step-equivalents trained, ${b.device_seconds.toFixed(1)} ` +
    `device-seconds; wall ${b.wall_s.toFixed(1)} s against a critical path of ` +
    `${b.critical_path_s.toFixed(1)} s` +
    (b.critical_path.length > 0 ? ` (${b.critical_path.join(" → ")})` : "") +
    (b.wall_over_critical !== null ? `, ×${b.wall_over_critical.toFixed(2)}` : "") + ".",
  ];
  if (b.cached.phases > 0) {
    lines.push(
      `The cache saved ${savedText(b.cached)} (${b.cached.phases} ` +
        "phases reused from earlier runs of this experiment).",
    );
  }
  const shared = s.phases.filter((p) => p.shared_from !== undefined);
  if (shared.length > 0) {
    // One clause per source run: "experiment run <id>: phase, phase".
    const bySource = Map.groupBy(
      shared,
      (p) => `${p.shared_from} run ${basename(p.source_run ?? "?")}`,
    );
    lines.push(
      `Sharing saved ${savedText(b.shared)} (the same inputs by content, ` +
        "checked like any cached phase): " +
        [...bySource].map(([from, ps]) => `${from}: ${ps.map((p) => p.name).join(", ")}`)
          .join("; ") +
        ".",
    );
  }
  if (b.fused !== undefined) {
    lines.push(
      `Fusing the split saved ${savedText(b.fused)} (schedule.split: fused: the baseline ` +
        `saved at step ${s.save_at} and trained on; no split phase ran; ` +
        "priced at the baseline's measured wall for those steps).",
    );
  }
  const pooled = s.phases.filter((p) => p.devices !== undefined);
  if (pooled.length > 0) {
    lines.push(
      `Devices (${pooled[0].devices!.kind}): ` +
        pooled.map((p) => `${p.name} [${p.devices!.ids.join(",")}]`).join(", ") + ".",
    );
  }
  return lines;
}
