/** Binary search over ascending step arrays, shared by the lanes that window series. */

/** Index of the first element >= `x` in an ascending array (its length when none). */
export function firstAtLeast(sorted: Float64Array, x: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Whether an ascending array holds `x`. */
export function sortedHas(sorted: Float64Array, x: number): boolean {
  const i = firstAtLeast(sorted, x);
  return i < sorted.length && sorted[i] === x;
}
