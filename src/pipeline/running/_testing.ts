/**
 * Helpers for the tests of `src/pipeline/running/` only.
 *
 * @module
 */

import type { PhaseSpec } from "../../types/phase_spec.ts";

/**
 * A phase with only what scheduling and the bill read: name, role, tool, last step, producers
 * and a world size of 2.
 */
export const specStub = (
  name: string,
  role: PhaseSpec["role"],
  stopAt: number,
  consumes: string[] = [],
  tool: PhaseSpec["tool"] = "trainer",
): PhaseSpec =>
  ({
    name,
    role,
    tool,
    stopAt,
    consumes,
    args: { world_size: 2 },
    paths: {},
  }) as unknown as PhaseSpec;
