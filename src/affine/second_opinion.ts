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

/** A segment as comparable text (shape, source, target), or "nothing" past the end of a list. */
export function segmentText(s: TransferSegmentDict | undefined): string {
  return s === undefined
    ? "nothing"
    : JSON.stringify({ shape: s.shape, source: s.source, target: s.target });
}

/** Where two plans of one parameter set part: the first differing segment of one parameter. */
export interface SegmentDifference {
  /** Parameter name. */
  parameter: string;
  /** Index of the first differing segment (0 when a side lacks the parameter). */
  index: number;
  /** Segment counts of each side (undefined: that side has no such parameter). */
  counts: [number | undefined, number | undefined];
  /** The two segments at `index` as {@link segmentText}. */
  segments: [string, string];
}

/**
 * One entry per parameter whose segment lists differ (shape, source and target of each, in
 * order), in name order; empty when the two plans are equal segment for segment.
 */
export function segmentDifferences(
  a: ReadonlyMap<string, readonly TransferSegmentDict[]>,
  b: ReadonlyMap<string, readonly TransferSegmentDict[]>,
): SegmentDifference[] {
  const out: SegmentDifference[] = [];
  for (const name of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    const x = a.get(name), y = b.get(name);
    const counts: [number | undefined, number | undefined] = [x?.length, y?.length];
    if (x === undefined || y === undefined) {
      out.push({
        parameter: name,
        index: 0,
        counts,
        segments: [segmentText(x?.[0]), segmentText(y?.[0])],
      });
      continue;
    }
    for (let i = 0; i < Math.max(x.length, y.length); i++) {
      const sx = segmentText(x[i]), sy = segmentText(y[i]);
      if (sx !== sy) {
        out.push({ parameter: name, index: i, counts, segments: [sx, sy] });
        break;
      }
    }
  }
  return out;
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
  const theirs = new Map(names.map((name) => [name, plan.parameters[name].segments]));
  const mine = new Map([...ours.parameters].map(([name, p]) => [name, p.segments]));
  const differences = segmentDifferences(theirs, mine);
  const d = differences[0];
  return {
    available: true,
    equal: differences.length === 0,
    parameters: names.length,
    differingParameters: differences.length,
    ...(d
      ? {
        firstDifference: `${d.parameter}: segment ${d.index} of ${d.counts[0] ?? 0} vs ` +
          `${d.counts[1] ?? 0}: the plan has ${d.segments[0]}, the harness ${d.segments[1]}`,
      }
      : {}),
  };
}
