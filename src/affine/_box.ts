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

/** Number of elements in a box (1 for a 0-d box). */
export function boxVolume(box: Box): number {
  let v = 1;
  for (const e of box.extent) v *= e;
  return v;
}

/** Whether some axis of the box has no elements. */
export function boxIsEmpty(box: Box): boolean {
  return box.extent.some((e) => e === 0);
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

/** Whether `outer` contains every element of `inner`. */
export function boxContains(outer: Box, inner: Box): boolean {
  for (let i = 0; i < outer.origin.length; i++) {
    if (inner.origin[i] < outer.origin[i]) return false;
    if (inner.origin[i] + inner.extent[i] > outer.origin[i] + outer.extent[i]) return false;
  }
  return true;
}

/** Whether two boxes are the same block. */
export function boxEquals(a: Box, b: Box): boolean {
  for (let i = 0; i < a.origin.length; i++) {
    if (a.origin[i] !== b.origin[i] || a.extent[i] !== b.extent[i]) return false;
  }
  return true;
}

/** A string key identifying a box (for grouping replicas of the same block). */
export function boxKey(box: Box): string {
  return `${box.origin.join(",")}+${box.extent.join(",")}`;
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

/** The disjoint parts of `region` outside `cut` (DeepSpeed `_subtract`). */
export function boxSubtract(region: Box, cut: Box): Box[] {
  if (!boxesOverlap(region, cut)) return [region];
  const overlap = boxIntersection(region, cut);
  const origin = [...region.origin];
  const extent = [...region.extent];
  const parts: Box[] = [];
  for (let axis = 0; axis < origin.length; axis++) {
    const low = overlap.origin[axis], high = overlap.origin[axis] + overlap.extent[axis];
    if (origin[axis] < low) {
      const shape = [...extent];
      shape[axis] = low - origin[axis];
      parts.push({ origin: [...origin], extent: shape });
      extent[axis] -= shape[axis];
      origin[axis] = low;
    }
    const end = origin[axis] + extent[axis];
    if (high < end) {
      const start = [...origin];
      const shape = [...extent];
      start[axis] = high;
      shape[axis] = end - high;
      parts.push({ origin: start, extent: shape });
      extent[axis] = high - origin[axis];
    }
  }
  return parts;
}
