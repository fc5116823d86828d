/**
 * The plan verifier's verdict as text: what `deno task parity verify-plan <plan.json>` prints
 * (docs/plan-sync.md, "Running the verifier").
 *
 * @module
 */

import type { PlanStats, PlanVerdict } from "./verify.ts";

function formatBytes(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

/** Human-readable lines for a verdict: the verdict first, then the stats. */
export function formatVerdict(path: string, verdict: PlanVerdict): string[] {
  if (!verdict.ok) return [`REJECTED ${path}`, `  ${verdict.error}`];
  const s = verdict.stats as PlanStats;
  const lines = [
    `OK ${path}${verdict.executed ? " (executed on synthetic data, matches extract)" : ""}`,
    `  parameters       ${s.parameters}`,
    `  segments         ${s.segments}`,
    `  moved bytes      ${formatBytes(s.movedBytes)} (${s.movedElements} elements)`,
    `  local bytes      ${formatBytes(s.localBytes)}${
      s.processesMapped ? "" : " (no process mapping)"
    }`,
    `  remote bytes     ${formatBytes(s.remoteBytes)}`,
    `  process send     max ${formatBytes(s.maxProcessSendBytes)}, mean ${
      formatBytes(s.meanProcessSendBytes)
    }`,
    `  process receive  max ${formatBytes(s.maxProcessReceiveBytes)}, mean ${
      formatBytes(s.meanProcessReceiveBytes)
    }`,
  ];
  for (const [p, b] of Object.entries(s.sendBytesByProcess)) {
    lines.push(`    send ${p}: ${formatBytes(b)}`);
  }
  for (const [p, b] of Object.entries(s.receiveBytesByProcess)) {
    lines.push(`    receive ${p}: ${formatBytes(b)}`);
  }
  return lines;
}
