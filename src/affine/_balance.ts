/**
 * The arithmetic behind the `balanced` replica policy: an exact fractional optimum by max-flow,
 * made a forest by cycle cancelling, then cut into whole rows by McNaughton's wrap-around rule.
 * See `balanced` in `policies.ts` for the contract and the bound.
 *
 * @module
 */

/** One request that has a choice: its holder processes and their lowest locations. */
export interface FlexibleRequest {
  /** Index of the request in the batch. */
  index: number;
  /** Bytes of the region. */
  bytes: number;
  /** Rows (axis-0 extent; 1 for a scalar). */
  rows: number;
  /** Distinct holder process keys, sorted. */
  keys: string[];
}

/** A row range of one request assigned to one process key. */
export interface RowPart {
  /** Process key. */
  key: string;
  /** First row (relative to the request). */
  start: number;
  /** Number of rows. */
  rows: number;
}

/** Max-flow on a small dense graph (Edmonds–Karp); capacities are integers as doubles. */
function maxFlow(cap: Float64Array[], source: number, sink: number): Float64Array[] {
  const n = cap.length;
  const flow = cap.map(() => new Float64Array(n));
  const parent = new Int32Array(n);
  for (;;) {
    parent.fill(-1);
    parent[source] = source;
    const queue = [source];
    for (let q = 0; q < queue.length && parent[sink] < 0; q++) {
      const u = queue[q];
      for (let v = 0; v < n; v++) {
        if (parent[v] < 0 && cap[u][v] - flow[u][v] > 0) {
          parent[v] = u;
          queue.push(v);
        }
      }
    }
    if (parent[sink] < 0) return flow;
    let push = Infinity;
    for (let v = sink; v !== source; v = parent[v]) {
      push = Math.min(push, cap[parent[v]][v] - flow[parent[v]][v]);
    }
    for (let v = sink; v !== source; v = parent[v]) {
      flow[parent[v]][v] += push;
      flow[v][parent[v]] -= push;
    }
  }
}

interface Solution {
  cap: number;
  quota: Map<string, Map<string, number>>;
}

/**
 * The smallest integer cap `T` on every process's load such that the aggregated demand of each
 * holder-set type can be spread over its processes (fixed load included), with one such spread.
 */
function optimum(
  types: Map<string, { keys: string[]; demand: number }>,
  processes: string[],
  fixed: Map<string, number>,
): Solution {
  const typeKeys = [...types.keys()];
  const n = typeKeys.length + processes.length + 2;
  const source = 0, sink = n - 1;
  const procIndex = new Map(processes.map((k, i) => [k, 1 + typeKeys.length + i]));
  const total = typeKeys.reduce((s, k) => s + types.get(k)!.demand, 0);
  const build = (cap: number) => {
    const c = Array.from({ length: n }, () => new Float64Array(n));
    typeKeys.forEach((k, t) => {
      const type = types.get(k)!;
      c[source][1 + t] = type.demand;
      for (const p of type.keys) c[1 + t][procIndex.get(p)!] = type.demand;
    });
    for (const p of processes) c[procIndex.get(p)!][sink] = Math.max(0, cap - (fixed.get(p) ?? 0));
    return c;
  };
  const feasible = (cap: number) => {
    const flow = maxFlow(build(cap), source, sink);
    let f = 0;
    for (let t = 0; t < typeKeys.length; t++) f += flow[source][1 + t];
    return { ok: f === total, flow };
  };
  let lo = Math.max(0, ...processes.map((p) => fixed.get(p) ?? 0));
  let hi = lo + total;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (feasible(mid).ok) hi = mid;
    else lo = mid + 1;
  }
  const { flow } = feasible(lo);
  const quota = new Map<string, Map<string, number>>();
  typeKeys.forEach((k, t) => {
    const row = new Map<string, number>();
    for (const p of types.get(k)!.keys) {
      const f = flow[1 + t][procIndex.get(p)!];
      if (f > 0) row.set(p, f);
    }
    quota.set(k, row);
  });
  return { cap: lo, quota };
}

/**
 * Cancels cycles in the type–process support so it becomes a forest: push flow around each
 * cycle (+δ, −δ alternately) until an edge empties. Every type's total and every process's
 * load is unchanged, so the cap still holds; a forest has at most (processes − components)
 * more edges than types, which bounds the number of cuts McNaughton's rule makes below.
 */
function makeForest(quota: Map<string, Map<string, number>>): void {
  for (;;) {
    const cycle = findCycle(quota);
    if (!cycle) return;
    // cycle: [t0, p0, t1, p1, ..., t(k-1), p(k-1)] with edges t_i–p_i (+) and p_i–t_(i+1) (−).
    let delta = Infinity;
    const k = cycle.length / 2;
    for (let i = 0; i < k; i++) {
      delta = Math.min(delta, quota.get(cycle[(2 * i + 2) % cycle.length])!.get(cycle[2 * i + 1])!);
    }
    for (let i = 0; i < k; i++) {
      const t = cycle[2 * i], p = cycle[2 * i + 1], tNext = cycle[(2 * i + 2) % cycle.length];
      const plus = quota.get(t)!;
      plus.set(p, (plus.get(p) ?? 0) + delta);
      const minus = quota.get(tNext)!;
      const left = minus.get(p)! - delta;
      if (left === 0) minus.delete(p);
      else minus.set(p, left);
    }
  }
}

/** Finds one cycle of the bipartite support as alternating [type, process, type, ...]. */
function findCycle(quota: Map<string, Map<string, number>>): string[] | null {
  const adj = new Map<string, string[]>();
  const add = (a: string, b: string) => {
    const l = adj.get(a);
    if (l) l.push(b);
    else adj.set(a, [b]);
  };
  for (const [t, row] of quota) {
    for (const p of [...row.keys()].sort()) {
      add(`t:${t}`, `p:${p}`);
      add(`p:${p}`, `t:${t}`);
    }
  }
  // Any non-tree edge of a traversal tree closes a cycle: u → ... → lca ← ... ← v, then v–u.
  const parent = new Map<string, string | null>();
  for (const start of [...adj.keys()].sort()) {
    if (parent.has(start)) continue;
    parent.set(start, null);
    const queue = [start];
    for (let q = 0; q < queue.length; q++) {
      const u = queue[q];
      for (const v of adj.get(u) ?? []) {
        if (!parent.has(v)) {
          parent.set(v, u);
          queue.push(v);
        } else if (parent.get(u) !== v && parent.get(v) !== u) {
          const up = (x: string) => {
            const path = [x];
            for (let w = parent.get(x); w !== null && w !== undefined; w = parent.get(w)) {
              path.push(w);
            }
            return path;
          };
          const fromU = up(u), fromV = up(v);
          const onU = new Set(fromU);
          const lcaAt = fromV.findIndex((x) => onU.has(x));
          const lca = fromV[lcaAt];
          const cycle = [
            ...fromU.slice(0, fromU.indexOf(lca) + 1),
            ...fromV.slice(0, lcaAt).reverse(),
          ];
          const first = cycle.findIndex((x) => x.startsWith("t:"));
          return [...cycle.slice(first), ...cycle.slice(0, first)].map((x) => x.slice(2));
        }
      }
    }
  }
  return null;
}

/**
 * Cuts the requests of each type along a line of bytes at its processes' quota boundaries
 * (McNaughton's wrap-around rule), snapping each cut to a whole row and away from any part
 * smaller than `minSplitBytes`.
 */
function wrapAround(
  flexible: FlexibleRequest[],
  typeOf: (r: FlexibleRequest) => string,
  quota: Map<string, Map<string, number>>,
  minSplitBytes: number,
): Map<number, RowPart[]> {
  const byType = new Map<string, FlexibleRequest[]>();
  for (const r of flexible) {
    const k = typeOf(r);
    const l = byType.get(k);
    if (l) l.push(r);
    else byType.set(k, [r]);
  }
  const out = new Map<number, RowPart[]>();
  for (const [type, reqs] of byType) {
    const row = quota.get(type)!;
    const keys = [...row.keys()].sort();
    const cuts: number[] = [];
    let acc = 0;
    for (let i = 0; i < keys.length - 1; i++) cuts.push(acc += row.get(keys[i])!);
    let start = 0, cutIndex = 0, keyIndex = 0;
    for (const r of reqs) {
      const end = start + r.bytes;
      const rowBytes = r.bytes / r.rows;
      // Smallest and largest interior row boundary that leaves both sides >= minSplitBytes.
      const jMin = Math.max(1, Math.ceil(minSplitBytes / rowBytes));
      const jMax = r.rows - jMin;
      const boundaries: { row: number; key: string }[] = [];
      const startKey = keys[keyIndex];
      while (cutIndex < cuts.length && cuts[cutIndex] < end) {
        const c = cuts[cutIndex];
        let row: number;
        if (c <= start) row = 0;
        else {
          const candidates = [0, r.rows];
          if (jMin <= jMax) {
            candidates.push(Math.min(jMax, Math.max(jMin, Math.round((c - start) / rowBytes))));
          }
          row = candidates.reduce((best, j) =>
            Math.abs(start + j * rowBytes - c) < Math.abs(start + best * rowBytes - c) ||
              (Math.abs(start + j * rowBytes - c) === Math.abs(start + best * rowBytes - c) &&
                j < best)
              ? j
              : best
          );
        }
        cutIndex++;
        keyIndex++;
        boundaries.push({ row, key: keys[keyIndex] });
      }
      // Parts: from row 0 with the key current at the request's start, switching at boundaries.
      let parts: RowPart[] = [];
      let currentKey = startKey;
      let at = 0;
      for (const b of boundaries) {
        if (b.row > at) parts.push({ key: currentKey, start: at, rows: b.row - at });
        at = Math.max(at, b.row);
        currentKey = b.key;
      }
      if (r.rows > at) parts.push({ key: currentKey, start: at, rows: r.rows - at });
      parts = foldSmallParts(parts, rowBytes, minSplitBytes);
      out.set(r.index, parts);
      start = end;
    }
  }
  return out;
}

/** Merges parts under `minSplitBytes` into their larger neighbour until none is left. */
function foldSmallParts(parts: RowPart[], rowBytes: number, minSplitBytes: number): RowPart[] {
  let list = parts.filter((p) => p.rows > 0);
  for (;;) {
    if (list.length <= 1) return list;
    const i = list.findIndex((p) => p.rows * rowBytes < minSplitBytes);
    if (i < 0) break;
    const left = i > 0 ? list[i - 1] : null, right = i + 1 < list.length ? list[i + 1] : null;
    const into = !right || (left && left.rows >= right.rows) ? i - 1 : i + 1;
    const target = list[into];
    const merged: RowPart = {
      key: target.key,
      start: Math.min(target.start, list[i].start),
      rows: target.rows + list[i].rows,
    };
    list = list.filter((_, k) => k !== i && k !== into);
    list.splice(Math.min(i, into), 0, merged);
  }
  // Adjacent parts of one process become one part.
  const joined: RowPart[] = [];
  for (const p of list) {
    const last = joined[joined.length - 1];
    if (last && last.key === p.key) last.rows += p.rows;
    else joined.push({ ...p });
  }
  return joined;
}

/** Result of {@link balanceSplits}. */
export interface BalanceResult {
  /** Row parts per flexible request index. */
  parts: Map<number, RowPart[]>;
  /** The fractional lower bound `T*` (integer bytes) on the max per-process load. */
  lowerBound: number;
}

/**
 * Spreads the flexible requests over their holder processes, given the load each process
 * already carries, so the maximum load is within the documented bound of the optimum.
 */
export function balanceSplits(
  flexible: FlexibleRequest[],
  fixed: Map<string, number>,
  minSplitBytes: number,
): BalanceResult {
  const types = new Map<string, { keys: string[]; demand: number }>();
  const typeOf = (r: FlexibleRequest) => r.keys.join("\u0000");
  for (const r of flexible) {
    const k = typeOf(r);
    const t = types.get(k);
    if (t) t.demand += r.bytes;
    else types.set(k, { keys: r.keys, demand: r.bytes });
  }
  const processes = [...new Set([...fixed.keys(), ...flexible.flatMap((r) => r.keys)])].sort();
  if (types.size === 0) {
    return {
      parts: new Map(),
      lowerBound: Math.max(0, ...processes.map((p) => fixed.get(p) ?? 0)),
    };
  }
  const { cap, quota } = optimum(types, processes, fixed);
  makeForest(quota);
  return { parts: wrapAround(flexible, typeOf, quota, minSplitBytes), lowerBound: cap };
}
