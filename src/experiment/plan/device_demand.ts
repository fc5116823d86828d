/**
 * How many devices of a pool (`devices:`) a phase takes: decided here once, for the rule that
 * refuses a phase larger than the pool and for the resolved plan the scheduler reads.
 *
 * @module
 */

import type { DevicePoolSpec, PhaseTool } from "../../types/mod.ts";

/**
 * Devices a phase takes from a pool of `kind`: a trainer its `world_size` (one rank per GPU or
 * core; 1 when undeclared); a converter, planner or plan executor one CPU core on a `cpu` pool and
 * no GPU on a `cuda` pool (they run on the host).
 */
export function deviceDemand(
  tool: PhaseTool,
  args: Readonly<Record<string, unknown>>,
  kind: DevicePoolSpec["kind"],
): number {
  if (tool !== "trainer") return kind === "cpu" ? 1 : 0;
  const worldSize = Number(args.world_size ?? 1);
  return Number.isInteger(worldSize) && worldSize > 0 ? worldSize : 1;
}
