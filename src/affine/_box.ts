/**
 * Axis-aligned boxes of a logical tensor: origin plus extent, never enumerated per element.
 *
 * @module
 */

/** An axis-aligned block: first coordinate and extent per axis. */
export interface Box {
  /** First coordinate on each axis. */
  origin: number[];
  /** Number of elements on each axis. */
  extent: number[];
}

/** The overlap of two boxes of the same rank (extent 0 on some axis when disjoint). */
export function boxIntersection(a: Box, b: Box): Box {
  const origin: number[] = new Array(a.origin.length);
  const extent: number[] = new Array(a.origin.length);
  for (let i = 0; i < a.origin.length; i++) {
    const low = Math.max(a.origin[i], b.origin[i]);
    const high = Math.min(a.origin[i] + a.extent[i], b.origin[i] + b.extent[i]);
    origin[i] = low;
    extent[i] = Math.max(0, high - low);
  }
  return { origin, extent };
}

/** Whether two boxes share at least one element. */
export function boxesOverlap(a: Box, b: Box): boolean {
  for (let i = 0; i < a.origin.length; i++) {
    if (
      Math.max(a.origin[i], b.origin[i]) >=
        Math.min(a.origin[i] + a.extent[i], b.origin[i] + b.extent[i])
    ) return false;
  }
  return true;
}

/** Human-readable form, as DeepSpeed prints `LogicalBox`. */
export function boxToString(box: Box): string {
  return `Box([${box.origin.join(", ")}]+[${box.extent.join(", ")}])`;
}

/** Lexicographic comparison of two coordinate vectors. */
export function compareCoords(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

// ---------------------------------------------------------------------------------------------
// Sweeps: pairs of overlapping boxes without all-pairs checks

/**
 * The axis a sweep should run along: the one on which boxes are shortest relative to the span
 * they occupy together (ties to the lowest axis), since a sweep compares the pairs that overlap on
 * its axis and those are about `n² · mean extent / span` of them. -1 for 0-d boxes. Linear, no
 * allocation.
 */
export function sweepAxis(boxes: readonly Box[], more: readonly Box[] = []): number {
  const nd = boxes.length > 0
    ? boxes[0].origin.length
    : more.length > 0
    ? more[0].origin.length
    : 0;
  let best = -1, bestScore = Infinity;
  for (let axis = 0; axis < nd; axis++) {
    let low = Infinity, high = -Infinity, sum = 0;
    for (let g = 0; g < 2; g++) {
      const list = g === 0 ? boxes : more;
      for (let i = 0; i < list.length; i++) {
        const o = list[i].origin[axis], e = list[i].extent[axis];
        if (o < low) low = o;
        if (o + e > high) high = o + e;
        sum += e;
      }
    }
    const score = high > low ? sum / (high - low) : Infinity;
    if (score < bestScore) {
      best = axis;
      bestScore = score;
    }
  }
  return best === -1 && nd > 0 ? 0 : best;
}

/** Indices of `boxes` sorted by origin on `axis` (then by index: stable). */
function orderAlong(boxes: readonly Box[], axis: number): Int32Array {
  const order = new Int32Array(boxes.length);
  for (let i = 0; i < order.length; i++) order[i] = i;
  if (axis < 0) return order;
  let sorted = true;
  for (let i = 1; i < boxes.length && sorted; i++) {
    if (boxes[i].origin[axis] < boxes[i - 1].origin[axis]) sorted = false;
  }
  if (!sorted) order.sort((a, b) => boxes[a].origin[axis] - boxes[b].origin[axis] || a - b);
  return order;
}

/** Whether two boxes overlap on every axis but `skip` (already known to overlap there). */
function overlapsElsewhere(a: Box, b: Box, skip: number): boolean {
  const ao = a.origin, ae = a.extent, bo = b.origin, be = b.extent;
  for (let i = 0; i < ao.length; i++) {
    if (i === skip) continue;
    const low = ao[i] > bo[i] ? ao[i] : bo[i];
    const ea = ao[i] + ae[i], eb = bo[i] + be[i];
    if (low >= (ea < eb ? ea : eb)) return false;
  }
  return true;
}

/**
 * Calls `visit(i, j)` for every pair of non-empty boxes of one list that share an element, by a
 * sweep along `axis` ({@link sweepAxis}): only pairs that overlap on that axis are compared, so
 * the cost is the sort plus those pairs, not all pairs. Each pair is visited once, `i` the box
 * starting earlier on the axis (ties: the lower index). `visit` returning true stops the sweep.
 */
export function forEachOverlap(
  boxes: readonly Box[],
  axis: number,
  visit: (i: number, j: number) => boolean | void,
): void {
  const order = orderAlong(boxes, axis);
  const active: number[] = [];
  for (let k = 0; k < order.length; k++) {
    const j = order[k];
    const b = boxes[j];
    const start = axis < 0 ? 0 : b.origin[axis];
    let kept = 0;
    for (let m = 0; m < active.length; m++) {
      const i = active[m];
      const a = boxes[i];
      if (axis >= 0 && a.origin[axis] + a.extent[axis] <= start) continue;
      active[kept++] = i;
      if (overlapsElsewhere(a, b, axis) && visit(i, j) === true) return;
    }
    active.length = kept;
    active.push(j);
  }
}

/**
 * Calls `visit(i, j)` for every pair of box `a[i]` and box `b[j]` that share an element, by one
 * sweep of both lists along `axis`: the cost is the sorts plus the pairs overlapping on that axis.
 */
export function forEachOverlapBetween(
  a: readonly Box[],
  b: readonly Box[],
  axis: number,
  visit: (i: number, j: number) => void,
): void {
  const oa = orderAlong(a, axis), ob = orderAlong(b, axis);
  const activeA: number[] = [], activeB: number[] = [];
  let ia = 0, ib = 0;
  while (ia < oa.length || ib < ob.length) {
    const takeA = ib >= ob.length ||
      (ia < oa.length && (axis < 0 || a[oa[ia]].origin[axis] <= b[ob[ib]].origin[axis]));
    const box = takeA ? a[oa[ia]] : b[ob[ib]];
    const start = axis < 0 ? 0 : box.origin[axis];
    const others = takeA ? activeB : activeA;
    const list = takeA ? b : a;
    let kept = 0;
    for (let m = 0; m < others.length; m++) {
      const k = others[m];
      const other = list[k];
      if (axis >= 0 && other.origin[axis] + other.extent[axis] <= start) continue;
      others[kept++] = k;
      if (overlapsElsewhere(box, other, axis)) {
        if (takeA) visit(oa[ia], k);
        else visit(k, ob[ib]);
      }
    }
    others.length = kept;
    if (takeA) activeA.push(oa[ia++]);
    else activeB.push(ob[ib++]);
  }
}
