// Axis ticks and labels that read like the tables: decade ticks for log axes, binary byte ticks,
// and vega `labelExpr`s that print values exactly as src/format/numbers.ts does. Vega's own
// formats (`~s`, `.3~e`, U+2212 minus) disagree with the tables, so every label goes through here.

import { BYTE_UNITS, stat, STAT_DIGITS } from "../format/mod.ts";

/**
 * Decade-aligned domain of the positive finite values (`[1e-7, 1e-2]`), null when there is none.
 * A single value gets one decade on each side, so it never sits on the frame.
 */
export function decadeDomain(values: Iterable<number | null | undefined>): [number, number] | null {
  let lo = Number.POSITIVE_INFINITY;
  let hi = 0;
  for (const v of values) {
    if (v === null || v === undefined || !(v > 0) || !Number.isFinite(v)) continue;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (!(hi > 0)) return null;
  let a = Math.floor(Math.log10(lo));
  let b = Math.ceil(Math.log10(hi));
  // log10 rounds near powers of ten; one decade of slack keeps every value inside.
  if (pow10(a) > lo) a--;
  if (pow10(b) < hi) b++;
  if (a === b) {
    a--;
    b++;
  }
  return [pow10(a), pow10(b)];
}

/** Powers of ten inside `domain`, every k-th decade so that at most `maxTicks` remain. */
export function decadeTicks(domain: [number, number], maxTicks = 6): number[] {
  const a = Math.round(Math.log10(domain[0]));
  const b = Math.round(Math.log10(domain[1]));
  const stride = Math.max(1, Math.ceil((b - a + 1) / maxTicks));
  const ticks: number[] = [];
  // Anchored at the top decade: the largest difference is the one the reader looks for.
  for (let k = b; k >= a; k -= stride) ticks.unshift(pow10(k));
  return ticks;
}

/**
 * Integer ticks for a symlog ULP axis: 0, then powers of ten up to `max`, at most `maxTicks`.
 */
export function ulpTicks(max: number, maxTicks = 6): number[] {
  if (!(max >= 1) || !Number.isFinite(max)) return [0, 1];
  const top = Math.ceil(Math.log10(max));
  const stride = Math.max(1, Math.ceil((top + 1) / (maxTicks - 1)));
  const ticks: number[] = [];
  for (let k = top; k >= 0; k -= stride) ticks.unshift(pow10(k));
  return [0, ...ticks];
}

/**
 * Ticks in whole binary units for a byte axis from 0: `[0, 4096, 8192, 12288, 16384]` for a
 * maximum of 14.6 KiB, so every label is a round `bytes()` value.
 */
export function byteTicks(max: number, maxTicks = 6): number[] {
  if (!(max > 0) || !Number.isFinite(max)) return [0];
  let unit = 1;
  while (unit * 1024 <= max && unit < 1024 ** (BYTE_UNITS.length - 1)) unit *= 1024;
  const multiples = [1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64, 100, 128, 200, 250, 256, 500, 512];
  const step = (multiples.find((m) => Math.ceil(max / (m * unit)) <= maxTicks - 1) ?? 1024) *
    unit;
  const ticks: number[] = [];
  for (let v = 0; v < max + step; v += step) ticks.push(v);
  return ticks;
}

/**
 * A `labelExpr` that prints each of `values` as `text(value)` and anything else as nothing (the
 * axis is given exactly these `values`, so nothing else occurs).
 */
export function lookupLabelExpr(values: readonly number[], text: (v: number) => string): string {
  let expr = '""';
  for (const v of [...values].reverse()) {
    expr = `datum.value === ${JSON.stringify(v)} ? ${JSON.stringify(text(v))} : ${expr}`;
  }
  return expr;
}

/**
 * The scale and axis of a log axis over a decade-aligned `domain`: decade ticks labelled as the
 * tables print them, no rounding of the domain (the ticks must stay on it).
 */
export function logAxis(domain: [number, number], maxTicks = 6): {
  scale: { type: "log"; domain: [number, number]; nice: false };
  axis: { values: number[]; labelExpr: string };
} {
  const values = decadeTicks(domain, maxTicks);
  return {
    scale: { type: "log", domain, nice: false },
    axis: { values, labelExpr: lookupLabelExpr(values, stat) },
  };
}

// d3-format writes U+2212 for minus; the tables use "-".
const ASCII_MINUS = (expr: string) => `replace(${expr}, regexp("\u2212", "g"), "-")`;

/** `stat()` of src/format/numbers.ts as a vega `labelExpr` (4 significant digits, `1.5e-7`). */
export const STAT_LABEL_EXPR = `datum.value === 0 ? "0" : ` +
  ASCII_MINUS(
    `abs(datum.value) >= 0.001 && abs(datum.value) < 1000000 ? ` +
      `format(datum.value, ".${STAT_DIGITS}~r") : format(datum.value, ".${STAT_DIGITS}~e")`,
  );

/**
 * `bytes()` of src/format/numbers.ts as a vega `labelExpr`, built from {@link BYTE_UNITS} so the
 * unit list cannot drift from the tables' (`14.25 KiB`, exact below 1 KiB).
 */
export const BYTES_LABEL_EXPR = (() => {
  let expr = `datum.value + "\u00a0${BYTE_UNITS[0]}"`;
  for (let u = 1; u < BYTE_UNITS.length; u++) {
    const scale = 1024 ** u;
    expr = `abs(datum.value) >= ${scale} ? format(datum.value / ${scale}, ".${STAT_DIGITS}~r") + ` +
      `"\u00a0${BYTE_UNITS[u]}" : (${expr})`;
  }
  return expr;
})();

function pow10(k: number): number {
  // Parsed, not computed: Math.pow(10, -7) is 9.999999999999999e-8.
  return Number(`1e${k}`);
}
