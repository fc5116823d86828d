/**
 * The order the scheduler offers ready phases a slot or devices: the longest remaining chain
 * first (its own step-equivalents plus those of its longest chain of dependants, one step per
 * phase that trains none), so the critical path never waits behind a phase off it.
 *
 * @module
 */

import type { PhaseSpec } from "../../types/mod.ts";
import { phaseSteps } from "./run_bill.ts";

/** Phase names, longest remaining chain first; ties keep the plan's order. */
export function launchOrder(specs: readonly PhaseSpec[], saveAt: number): string[] {
  const tail = new Map<string, number>();
  for (const spec of [...specs].reverse()) {
    const after = specs.filter((s) => s.consumes.includes(spec.name))
      .reduce((a, s) => Math.max(a, tail.get(s.name) ?? 0), 0);
    tail.set(spec.name, Math.max(1, phaseSteps(spec, saveAt)) + after);
  }
  return specs.map((s, i) => ({ name: s.name, i, t: tail.get(s.name)! }))
    .sort((a, b) => b.t - a.t || a.i - b.i).map((x) => x.name);
}
