/**
 * Batch replica policies for {@link planTransfers} (DeepSpeed `affine_replica_policy.py`, PR
 * #8936, plus `balanced`). A policy receives every request of one sync in the fixed order
 * (parameter, target location, origin) and returns one answer per request: a holder location,
 * or parts cutting the region along axis 0. Every policy here is deterministic: answers depend
 * only on the requests, so every rank computes the same plan.
 *
 * Processes: a holder's process is `holder.process` when the planner was given
 * `sourceProcesses`; without a mapping, each location counts as its own process and no copy is
 * ever assumed local.
 *
 * @module
 */

import { balanceSplits } from "./_balance.ts";
import type { FlexibleRequest } from "./_balance.ts";
import { AffineError } from "./affine_errors.ts";
/** One holder of a requested region: its map location and, when mapped, its process. */
export interface ReplicaHolder {
  /** Source map location (rank) holding the region. */
  location: number;
  /** Process behind the location, present only when `sourceProcesses` was given. */
  process?: number;
}

/** One region a target location needs, with its validated holders (DeepSpeed `ReplicaRequest`). */
export interface ReplicaRequest {
  /** Parameter name. */
  parameter: string;
  /** Target map location receiving the region. */
  targetLocation: number;
  /** Process behind the target location, present only when `targetProcesses` was given. */
  targetProcess?: number;
  /** First logical coordinate of the region. */
  logicalOrigin: number[];
  /** Extent of the region. */
  shape: number[];
  /** Size of the region in bytes (`numel × elementSize`). */
  bytes: number;
  /** Validated holders, sorted by location. */
  holders: ReplicaHolder[];
}

/** One part of a split answer: a slab of the region along axis 0 read from one holder. */
export interface ReplicaPart {
  /** Holder location to read this part from. */
  sourceLocation: number;
  /** First logical coordinate of the part. */
  logicalOrigin: number[];
  /** Extent of the part (equal to the region's on every axis but 0). */
  shape: number[];
}

/** A policy's answer for one request: a holder location, or parts cutting the region on axis 0. */
export type ReplicaAnswer = number | readonly ReplicaPart[];

/** What the planner tells a policy besides the requests. */
export interface PolicyContext {
  /** Smallest allowed part of a split, in bytes (0: no limit). */
  minSplitBytes: number;
}

/**
 * A batch replica policy: called once per sync with every request, in the fixed order
 * (parameter, target location, origin); returns one answer per request. Must be deterministic:
 * every rank has to reach the same answers from the same requests.
 */
export type ReplicaPolicy = (
  requests: readonly ReplicaRequest[],
  context: PolicyContext,
) => unknown;

/** The key a holder's send load is accounted under: its process, else its own location. */
export function processKey(holder: ReplicaHolder): string {
  return holder.process !== undefined ? `process:${holder.process}` : `location:${holder.location}`;
}

/** Whether a holder sits in the request's target process (never true without both mappings). */
export function isLocalHolder(request: ReplicaRequest, holder: ReplicaHolder): boolean {
  return request.targetProcess !== undefined && holder.process !== undefined &&
    holder.process === request.targetProcess;
}

function lowest(holders: readonly ReplicaHolder[]): ReplicaHolder {
  let best = holders[0];
  for (let i = 1; i < holders.length; i++) {
    if (holders[i].location < best.location) best = holders[i];
  }
  return best;
}

/** Reads the lowest holder location: what DeepSpeed's `plan_transfer` does by default. */
export const firstHolder: ReplicaPolicy = (requests): number[] => {
  const answers = new Array<number>(requests.length);
  for (let i = 0; i < requests.length; i++) answers[i] = lowest(requests[i].holders).location;
  return answers;
};

/**
 * Runs a per-request selector as a batch policy (DeepSpeed `per_request`). Single-holder
 * requests are answered with their holder without calling the selector, as `plan_transfer`
 * never consulted its selector for them; whatever the selector returns is checked by the
 * planner like any other answer.
 */
export function perRequest(selector: (request: ReplicaRequest) => unknown): ReplicaPolicy {
  return (requests) =>
    requests.map((r) => (r.holders.length === 1 ? r.holders[0].location : selector(r)));
}

/** Reads the highest holder location (a `perRequest` selector; DeepSpeed's test selector). */
export const highestHolder: ReplicaPolicy = perRequest((r) =>
  r.holders.reduce((a, b) => (b.location > a.location ? b : a)).location
);

/**
 * The `plan_transfers` default (DeepSpeed `local_first_least_loaded`): for each request in
 * order, a holder in the target's own process if there is one (lowest such location);
 * otherwise the holder whose sending process has the fewest bytes assigned so far in this
 * batch, ties to the lowest location. Every answer — single-holder and local ones included —
 * adds the request's bytes to the chosen process's count, so load the policy cannot move is
 * counted. Never splits. Without process mappings it never assumes a local copy and counts load
 * per location.
 */
export const localFirstLeastLoaded: ReplicaPolicy = (requests): number[] => {
  // Load per sending process, or per location without a mapping: numeric keys (even for a
  // process, odd for a location) instead of building a string per holder and request.
  const assigned = new Map<number, number>();
  const keyOf = (h: ReplicaHolder) => h.process !== undefined ? 2 * h.process : 2 * h.location + 1;
  const answers = new Array<number>(requests.length);
  for (let i = 0; i < requests.length; i++) {
    const r = requests[i];
    const holders = r.holders;
    let choice: ReplicaHolder | undefined;
    for (let k = 0; k < holders.length; k++) {
      const h = holders[k];
      if (isLocalHolder(r, h) && (choice === undefined || h.location < choice.location)) {
        choice = h;
      }
    }
    if (choice === undefined) {
      choice = holders[0];
      let best = Infinity;
      for (let k = 0; k < holders.length; k++) {
        const h = holders[k];
        const load = assigned.get(keyOf(h)) ?? 0;
        if (load < best || (load === best && h.location < choice.location)) {
          best = load;
          choice = h;
        }
      }
    }
    const key = keyOf(choice);
    assigned.set(key, (assigned.get(key) ?? 0) + r.bytes);
    answers[i] = choice.location;
  }
  return answers;
};

/** `balanced`'s answers with the numbers behind them. */
export interface BalancedOutcome {
  /** One answer per request. */
  answers: ReplicaAnswer[];
  /** Remote bytes each sending process (key from {@link processKey}) is assigned. */
  sendLoad: Map<string, number>;
  /** Largest entry of `sendLoad` (0 when nothing is remote). */
  maxSendLoad: number;
  /**
   * `T*`: the smallest max load of any fractional assignment (every valid plan, split or not,
   * is one, so no plan can do better).
   */
  lowerBound: number;
  /** The bound `balanced` guarantees: `T* + (P − 1) · (ρ + 2m)` (see {@link balanced}). */
  guaranteedBound: number;
  /** Requests answered with more than one part. */
  splitRequests: number;
}

/**
 * Computes {@link balanced}'s answers together with its load figures and bounds.
 */
export function balancedOutcome(
  requests: readonly ReplicaRequest[],
  context: PolicyContext,
): BalancedOutcome {
  const m = context.minSplitBytes;
  const answers: ReplicaAnswer[] = new Array(requests.length);
  const fixed = new Map<string, number>();
  const flexible: FlexibleRequest[] = [];
  const lowestByKey = new Map<number, Map<string, number>>();
  requests.forEach((r, i) => {
    const local = r.holders.filter((h) => isLocalHolder(r, h));
    if (local.length > 0) {
      // A local copy sends nothing: it can only lower the maximum.
      answers[i] = lowest(local).location;
      return;
    }
    const byKey = new Map<string, number>();
    for (const h of r.holders) {
      const k = processKey(h);
      const at = byKey.get(k);
      if (at === undefined || h.location < at) byKey.set(k, h.location);
    }
    const keys = [...byKey.keys()].sort();
    if (keys.length === 1) {
      answers[i] = byKey.get(keys[0])!;
      fixed.set(keys[0], (fixed.get(keys[0]) ?? 0) + r.bytes);
      return;
    }
    flexible.push({ index: i, bytes: r.bytes, rows: r.shape.length > 0 ? r.shape[0] : 1, keys });
    lowestByKey.set(i, byKey);
  });

  // Candidate A: the flow optimum cut into rows.
  const { parts, lowerBound } = balanceSplits(flexible, fixed, m);
  const loadA = new Map(fixed);
  for (const r of flexible) {
    const rowBytes = r.bytes / r.rows;
    for (const p of parts.get(r.index)!) {
      loadA.set(p.key, (loadA.get(p.key) ?? 0) + p.rows * rowBytes);
    }
  }
  // Candidate B: no splits, largest request first to the least-loaded holder process.
  const loadB = new Map(fixed);
  const choiceB = new Map<number, string>();
  for (const r of [...flexible].sort((a, b) => b.bytes - a.bytes || a.index - b.index)) {
    let best = r.keys[0];
    for (const k of r.keys) {
      if ((loadB.get(k) ?? 0) < (loadB.get(best) ?? 0)) best = k;
    }
    choiceB.set(r.index, best);
    loadB.set(best, (loadB.get(best) ?? 0) + r.bytes);
  }
  const maxOf = (load: Map<string, number>) => Math.max(0, ...load.values());
  const useSplits = maxOf(loadA) < maxOf(loadB);
  let splitRequests = 0;
  for (const r of flexible) {
    const byKey = lowestByKey.get(r.index)!;
    if (!useSplits) {
      answers[r.index] = byKey.get(choiceB.get(r.index)!)!;
      continue;
    }
    const rowParts = parts.get(r.index)!;
    if (rowParts.length === 1) {
      answers[r.index] = byKey.get(rowParts[0].key)!;
      continue;
    }
    splitRequests++;
    const request = requests[r.index];
    answers[r.index] = rowParts.map((p): ReplicaPart => ({
      sourceLocation: byKey.get(p.key)!,
      logicalOrigin: [request.logicalOrigin[0] + p.start, ...request.logicalOrigin.slice(1)],
      shape: [p.rows, ...request.shape.slice(1)],
    }));
  }
  const sendLoad = useSplits ? loadA : loadB;
  const processes = new Set([...fixed.keys(), ...flexible.flatMap((r) => r.keys)]);
  const rowMax = Math.max(0, ...flexible.map((r) => r.bytes / r.rows));
  return {
    answers,
    sendLoad,
    maxSendLoad: maxOf(sendLoad),
    lowerBound,
    guaranteedBound: lowerBound + Math.max(0, processes.size - 1) * (rowMax + 2 * m),
    splitRequests,
  };
}

/**
 * Minimises the largest per-process **remote send** load, splitting regions along axis 0
 * across holders when that helps, honouring `minSplitBytes`.
 *
 * 1. A request with a holder in the target's own process reads it (no remote bytes). A request
 *    whose holders all sit in one process is forced and becomes that process's fixed load.
 * 2. The rest are grouped by holder-process set ("type"); requests of one type are
 *    interchangeable for load. A binary search with max-flow (source → type, capacity its
 *    demand → its processes → sink, capacity `T − fixed`) finds `T*`, the smallest cap any
 *    fractional assignment meets. Every valid plan is such an assignment, so `T*` is a lower
 *    bound for every policy.
 * 3. Cycle cancelling makes the type–process support a forest without changing any load, so
 *    the quotas `q(type, process)` need at most `P − 1` cuts in total (`P` processes).
 * 4. Each type's requests are laid end to end and cut at its quota boundaries (McNaughton's
 *    wrap-around rule); each cut snaps to a whole row ρ and away from parts under `m =
 *    minSplitBytes`, and parts under `m` are folded into a neighbour. Each cut moves at most
 *    `ρ + 2m` bytes between processes, so the max load is at most `T* + (P − 1)(ρ + 2m)` with
 *    ρ the largest row of a flexible request.
 * 5. An unsplit largest-first least-loaded assignment is also computed; the answer with the
 *    smaller maximum wins (ties: no splits), so `balanced` never does worse than that greedy.
 *
 * Deterministic: all orders are fixed by the request order and sorted process keys.
 */
export const balanced: ReplicaPolicy = (requests, context): ReplicaAnswer[] =>
  balancedOutcome(requests, context).answers;

/** The policies reachable by name (CLI, plan files, experiment files). */
export const replicaPolicies: Readonly<Record<string, ReplicaPolicy>> = Object.freeze({
  first_holder: firstHolder,
  local_first_least_loaded: localFirstLeastLoaded,
  balanced,
  highest_holder: highestHolder,
});

/** Names accepted by {@link getReplicaPolicy}. */
export const REPLICA_POLICY_NAMES: readonly string[] = Object.freeze(Object.keys(replicaPolicies));

/**
 * Looks a policy up by name.
 *
 * @throws {AffineError} naming the known policies when `name` is not one of them.
 */
export function getReplicaPolicy(name: string): ReplicaPolicy {
  const policy = Object.hasOwn(replicaPolicies, name) ? replicaPolicies[name] : undefined;
  if (!policy) {
    throw new AffineError(
      `unknown replica policy ${JSON.stringify(name)}; known: ${REPLICA_POLICY_NAMES.join(", ")}`,
    );
  }
  return policy;
}
