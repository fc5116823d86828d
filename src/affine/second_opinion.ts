/**
 * A second opinion on another planner's plan file: the harness's planner plans the same maps,
 * with the same policy, process mappings and element sizes, and the two segment lists are
 * compared parameter by parameter, in order. A difference is a finding about one of the two
 * planners (or about a policy the other planner cannot express), never an error of the plan:
 * the verifier alone judges whether a plan is correct.
 *
 * @module
 */

import { AffineError } from "./affine_errors.ts";
import { mapFromDict } from "./map.ts";
import type { PlanFile } from "./plan_file.ts";
import { type MapPair, planTransfers, type TransferSegmentDict } from "./plan_transfers.ts";
import { replicaPolicies } from "./policies.ts";

/** What {@link secondOpinion} found. */
export interface SecondOpinionResult {
  /** Whether the harness could re-plan (a policy it does not know, or a map it refuses). */
  available: boolean;
  /** Every parameter's segments equal, in order. */
  equal: boolean;
  /** Parameters compared. */
  parameters: number;
  /** Parameters whose segments differ. */
  differingParameters: number;
  /** The first difference (or why no second opinion was possible), in one sentence. */
  firstDifference?: string;
}

function processMapping(record: Record<string, number>): Map<number, number> | undefined {
  const entries = Object.entries(record);
  return entries.length > 0 ? new Map(entries.map(([k, v]) => [Number(k), v])) : undefined;
}

function segmentText(s: TransferSegmentDict | undefined): string {
  return s === undefined
    ? "nothing"
    : JSON.stringify({ shape: s.shape, source: s.source, target: s.target });
}

function sameSegment(a: TransferSegmentDict, b: TransferSegmentDict): boolean {
  return segmentText(a) === segmentText(b);
}

/**
 * Re-plans every parameter of `plan` with the harness's planner and the plan's own policy, and
 * compares the segments with the plan's.
 */
export function secondOpinion(plan: PlanFile): SecondOpinionResult {
  const names = Object.keys(plan.parameters).sort();
  const policy = replicaPolicies[plan.policy];
  if (!policy) {
    return {
      available: false,
      equal: false,
      parameters: 0,
      differingParameters: 0,
      firstDifference: `the harness has no policy ${JSON.stringify(plan.policy)}`,
    };
  }
  const pairs = new Map<string, MapPair>();
  const elementSize = new Map<string, number>();
  let ours;
  try {
    for (const name of names) {
      const p = plan.parameters[name];
      pairs.set(name, {
        source: mapFromDict(p.source_map, `${name}.source_map`),
        target: mapFromDict(p.target_map, `${name}.target_map`),
      });
      elementSize.set(name, p.element_size);
    }
    ours = planTransfers(pairs, {
      policy,
      elementSize,
      sourceProcesses: processMapping(plan.source_processes),
      targetProcesses: processMapping(plan.target_processes),
    });
  } catch (e) {
    if (!(e instanceof AffineError)) throw e;
    return {
      available: false,
      equal: false,
      parameters: 0,
      differingParameters: 0,
      firstDifference: `the harness's planner refuses the maps: ${e.message}`,
    };
  }
  let differing = 0;
  let first: string | undefined;
  for (const name of names) {
    const theirs = plan.parameters[name].segments;
    const mine = ours.parameters.get(name)?.segments ?? [];
    const length = Math.max(theirs.length, mine.length);
    let at = -1;
    for (let i = 0; i < length && at < 0; i++) {
      if (!theirs[i] || !mine[i] || !sameSegment(theirs[i], mine[i])) at = i;
    }
    if (at < 0) continue;
    differing++;
    first ??= `${name}: segment ${at} of ${theirs.length} vs ${mine.length}: the plan has ` +
      `${segmentText(theirs[at])}, the harness ${segmentText(mine[at])}`;
  }
  return {
    available: true,
    equal: differing === 0,
    parameters: names.length,
    differingParameters: differing,
    ...(first ? { firstDifference: first } : {}),
  };
}
