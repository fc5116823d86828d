/**
 * Command line of the plan verifier:
 * `deno run -A src/affine/cli.ts verify <plan.json> [--execute] [--json]`.
 * The lead's `deno task parity verify-plan` calls {@link verifyPlanCommand}.
 *
 * @module
 */

import { verifyPlan } from "./verify.ts";
import type { PlanStats, PlanVerdict } from "./verify.ts";

const USAGE = "usage: verify-plan <plan.json> [--execute] [--json]";

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

/**
 * Verifies a plan file and prints the verdict and stats. `args` are the words after
 * `verify-plan`: `<plan.json> [--execute] [--json]`.
 *
 * @returns 0 when the plan verifies, 1 when it is rejected, 2 on bad usage or an unreadable
 * or non-JSON file.
 */
export async function verifyPlanCommand(args: string[]): Promise<number> {
  const flags = new Set(args.filter((a) => a.startsWith("--")));
  const paths = args.filter((a) => !a.startsWith("--"));
  const unknown = [...flags].filter((f) => f !== "--execute" && f !== "--json");
  if (paths.length !== 1 || unknown.length > 0) {
    console.error(unknown.length ? `unknown option ${unknown[0]}\n${USAGE}` : USAGE);
    return 2;
  }
  const path = paths[0];
  let raw: unknown;
  try {
    raw = JSON.parse(await Deno.readTextFile(path));
  } catch (e) {
    console.error(`cannot read plan ${path}: ${(e as Error).message}`);
    return 2;
  }
  const verdict = verifyPlan(raw, { execute: flags.has("--execute") });
  if (flags.has("--json")) console.log(JSON.stringify({ path, ...verdict }, null, 2));
  else for (const line of formatVerdict(path, verdict)) console.log(line);
  return verdict.ok ? 0 : 1;
}

/** Dispatches `verify <plan.json> ...`; returns the exit code. */
export async function runVerifyCli(argv: string[]): Promise<number> {
  if (argv[0] !== "verify") {
    console.error(`usage: cli.ts verify <plan.json> [--execute] [--json]`);
    return 2;
  }
  return await verifyPlanCommand(argv.slice(1));
}

if (import.meta.main) Deno.exit(await runVerifyCli(Deno.args));
