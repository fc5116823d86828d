/**
 * Fast path of the JSONL reader: scans a flat `{"key": number, ...}` step record in the file's
 * bytes without building an object (JSON.parse per line dominates reading a million lines). Anything it
 * does not recognise — strings, nested values, escapes, non-finite numbers, a missing or
 * non-integer step, a repeated key, bad syntax — makes it decline before touching the builder,
 * and the strict slow path handles the line.
 *
 * @module
 */

import type { Column, SeriesBuilder } from "./_builder.ts";

const QUOTE = 34;
const COMMA = 44;
const COLON = 58;
const OPEN = 123;
const CLOSE = 125;
const BACKSLASH = 92;
const ZERO = 48;
const NINE = 57;

const PLUS = 43;
const MINUS = 45;
const DOT = 46;

/** End (exclusive) of the number {@link fastNumber} scanned last. */
let numberEnd = 0;

// Exact powers of ten (10^22 is the largest exactly representable one).
const POW10 = Array.from({ length: 23 }, (_, k) => Number(`1e${k}`));

/**
 * Clinger's fast path: a JSON number whose significant digits fit 2^53 and whose decimal
 * exponent is at most 22 in magnitude is one correctly rounded IEEE operation on two exact
 * operands, so the result equals `Number(text)`. Returns NaN when the text breaks JSON's number
 * grammar in a way `Number()` would forgive (`+1`, `.5`, `01`, `1.`), and null when the fast
 * path does not apply (then `Number()` decides). The number ends at the first byte that cannot
 * continue it; that position is left in {@link numberEnd}.
 */
function fastNumber(text: Uint8Array, start: number, end: number): number | null {
  let pos = start;
  let negative = false;
  if (text[pos] === MINUS) {
    negative = true;
    pos++;
  }
  let mantissa = 0;
  let digits = 0;
  let scale = 0;
  const intStart = pos;
  while (pos < end) {
    const c = text[pos];
    if (c < ZERO || c > NINE) break;
    if (mantissa !== 0 || c !== ZERO) digits++;
    mantissa = mantissa * 10 + (c - ZERO);
    pos++;
  }
  numberEnd = pos;
  if (pos === intStart) return Number.NaN;
  if (text[intStart] === ZERO && pos - intStart > 1) return Number.NaN;
  if (pos < end && text[pos] === DOT) {
    pos++;
    const fracStart = pos;
    while (pos < end) {
      const c = text[pos];
      if (c < ZERO || c > NINE) break;
      if (mantissa !== 0 || c !== ZERO) digits++;
      mantissa = mantissa * 10 + (c - ZERO);
      scale--;
      pos++;
    }
    if (pos === fracStart) {
      numberEnd = pos;
      return Number.NaN;
    }
  }
  if (pos < end && (text[pos] === 101 || text[pos] === 69)) {
    pos++;
    let expNegative = false;
    const s = text[pos];
    if (s === MINUS || s === PLUS) {
      expNegative = s === MINUS;
      pos++;
    }
    const expStart = pos;
    let exponent = 0;
    while (pos < end) {
      const d = text[pos];
      if (d < ZERO || d > NINE) break;
      exponent = exponent * 10 + (d - ZERO);
      pos++;
    }
    if (pos === expStart) {
      numberEnd = pos;
      return Number.NaN;
    }
    scale += expNegative ? -exponent : exponent;
  }
  numberEnd = pos;
  // While the accumulated mantissa stays below 2^53 every step of it was exact.
  if (digits > 17 || mantissa > Number.MAX_SAFE_INTEGER || scale < -22 || scale > 22) {
    return null;
  }
  const magnitude = scale >= 0 ? mantissa * POW10[scale] : mantissa / POW10[-scale];
  return negative ? -magnitude : magnitude;
}

/** True when `text` holds `key` then a closing quote at `pos`. */
function sameKey(text: Uint8Array, pos: number, key: Uint8Array): boolean {
  const n = key.length;
  for (let i = 0; i < n; i++) if (text[pos + i] !== key[i]) return false;
  return text[pos + n] === QUOTE;
}

function isSpace(c: number): boolean {
  return c === 32 || c === 9 || c === 13 || c === 10;
}

/**
 * Scans flat numeric step records; reuses key bytes and columns between lines. Offsets are
 * byte offsets; `text` is the same content as a string when it is pure ASCII (offsets then
 * agree and numbers are sliced from it), else null (numbers are decoded from the bytes).
 */
export class FlatRecordScanner {
  #builder: SeriesBuilder;
  #text: string | null;
  #keyCache: Uint8Array[] = [];
  // Per field position: 0 a metric, 1 `step`, 2 `event` (saves string compares per field).
  #keyKinds: number[] = [];
  #columnCache: (Column | null)[] = [];
  #columns: (Column | null)[] = [];
  #values: number[] = [];

  /** A scanner feeding `builder`. */
  constructor(builder: SeriesBuilder, text: string | null) {
    this.#builder = builder;
    this.#text = text;
  }

  /** Scans bytes `[start, end)`; returns false (touching nothing) when the slow path must run. */
  scan(text: Uint8Array, start: number, end: number, lineNo: number): boolean {
    let pos = start;
    while (pos < end && isSpace(text[pos])) pos++;
    if (text[pos] !== OPEN) return false;
    pos++;
    const columns = this.#columns;
    const values = this.#values;
    const keyCache = this.#keyCache;
    const keyKinds = this.#keyKinds;
    const columnCache = this.#columnCache;
    let n = 0;
    let field = 0;
    let step = -1;
    while (true) {
      while (pos < end && isSpace(text[pos])) pos++;
      if (text[pos] !== QUOTE) return false;
      pos++;
      const cached = keyCache[field];
      if (cached !== undefined && sameKey(text, pos, cached)) {
        pos += cached.length + 1;
      } else {
        const close = text.indexOf(QUOTE, pos);
        if (close < 0 || close >= end) return false;
        const bytes = text.slice(pos, close);
        if (bytes.indexOf(BACKSLASH) >= 0) return false;
        for (let i = 0; i < bytes.length; i++) if (bytes[i] >= 0x80) return false;
        const name = String.fromCharCode(...bytes);
        const kind = name === "step" ? 1 : name === "event" ? 2 : 0;
        keyCache[field] = bytes;
        keyKinds[field] = kind;
        columnCache[field] = kind === 0 ? this.#builder.column(name) : null;
        pos = close + 1;
      }
      const kind = keyKinds[field];
      while (pos < end && isSpace(text[pos])) pos++;
      if (text[pos] !== COLON) return false;
      pos++;
      while (pos < end && isSpace(text[pos])) pos++;
      const numberStart = pos;
      if (kind === 1) {
        // Integer steps are parsed by hand; anything else goes to the strict path.
        if (step >= 0) return false;
        let v = 0;
        while (pos < end) {
          const c = text[pos];
          if (c < ZERO || c > NINE) break;
          v = v * 10 + (c - ZERO);
          pos++;
        }
        if (pos === numberStart || pos - numberStart > 15) return false;
        if (text[numberStart] === ZERO && pos - numberStart > 1) return false;
        step = v;
      } else {
        if (kind === 2) return false;
        let value = fastNumber(text, numberStart, end);
        pos = numberEnd;
        if (value === null) {
          value = Number(
            this.#text !== null
              ? this.#text.slice(numberStart, pos)
              : String.fromCharCode(...text.subarray(numberStart, pos)),
          );
        }
        if (!Number.isFinite(value)) return false;
        columns[n] = columnCache[field];
        values[n] = value;
        n++;
      }
      field++;
      while (pos < end && isSpace(text[pos])) pos++;
      const c = text[pos];
      pos++;
      if (c === COMMA) continue;
      if (c === CLOSE) break;
      return false;
    }
    while (pos < end && isSpace(text[pos])) pos++;
    if (pos !== end || step < 0) return false;
    // A repeated key: JSON.parse keeps the last; the strict path reproduces that exactly.
    for (let i = 1; i < n; i++) {
      for (let j = 0; j < i; j++) if (columns[i] === columns[j]) return false;
    }
    const builder = this.#builder;
    builder.beginRecord(step, lineNo);
    for (let i = 0; i < n; i++) builder.setIn(columns[i] as Column, values[i]);
    return true;
  }
}
