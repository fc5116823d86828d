// Text widths from the font the PNGs are drawn with. Headless vega has no canvas, so it guesses
// every string at 0.8 em per character: about 45% wider than DejaVu Sans. Layout built on that
// guess cuts legend names that would fit ("resume-plan-local_first_leas…"), gives legends a third
// of the image and widens charts with long subtitles. These widths come from the font's own
// advance widths (TrueType `cmap` format 12 and `hmtx`), so layout matches the rendered text.
// Why not resvg's metrics: resvg-wasm has no text-measuring call, only the bounding box of a whole
// rendered SVG. Measured through it (box of "|c|" minus box of "||") the widths are the same to
// the last bit for 79 characters tried, but each character costs one SVG parse and layout, 2–7 ms:
// 0.1–0.5 s per process that draws charts, against microseconds for these two table look-ups.

/** Advance width of a code point in em, from a TrueType font. */
export type AdvanceWidths = (codePoint: number) => number;

/**
 * Reads the advance widths of a TrueType font (`cmap` format 12 and `hmtx`). Code points the
 * font lacks get the width of its missing glyph (glyph 0).
 */
export function readAdvanceWidths(font: Uint8Array): AdvanceWidths {
  const view = new DataView(font.buffer, font.byteOffset, font.byteLength);
  const tables = new Map<string, number>();
  const numTables = view.getUint16(4);
  for (let i = 0; i < numTables; i++) {
    const at = 12 + 16 * i;
    const tag = String.fromCharCode(...font.subarray(at, at + 4));
    tables.set(tag, view.getUint32(at + 8));
  }
  const table = (tag: string) => {
    const at = tables.get(tag);
    if (at === undefined) throw new Error(`font has no ${tag} table`);
    return at;
  };
  const unitsPerEm = view.getUint16(table("head") + 18);
  const numberOfHMetrics = view.getUint16(table("hhea") + 34);
  const hmtx = table("hmtx");
  const advance = (glyph: number) =>
    view.getUint16(hmtx + 4 * Math.min(glyph, numberOfHMetrics - 1)) / unitsPerEm;

  const cmap = table("cmap");
  let groups = -1;
  for (let i = 0; i < view.getUint16(cmap + 2); i++) {
    const at = cmap + 4 + 8 * i;
    const sub = cmap + view.getUint32(at + 4);
    if (view.getUint16(sub) === 12) {
      groups = sub;
      break;
    }
  }
  if (groups < 0) throw new Error("font has no cmap format 12 subtable");
  const count = view.getUint32(groups + 12);
  const cache = new Map<number, number>();
  return (codePoint: number) => {
    let width = cache.get(codePoint);
    if (width !== undefined) return width;
    let glyph = 0;
    // Groups are sorted by start code: binary search.
    let lo = 0;
    let hi = count - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const at = groups + 16 + 12 * mid;
      const start = view.getUint32(at);
      const end = view.getUint32(at + 4);
      if (codePoint < start) hi = mid - 1;
      else if (codePoint > end) lo = mid + 1;
      else {
        glyph = view.getUint32(at + 8) + (codePoint - start);
        break;
      }
    }
    width = advance(glyph);
    cache.set(codePoint, width);
    return width;
  };
}

/** What vega passes to `textMetrics.width`: a text mark item. */
interface TextItem {
  fontSize?: number | string | null;
}

/**
 * A `textMetrics.width` for vega that measures with `widths`. It measures the text as given:
 * vega's own `limit` truncation calls it to find how much fits, so it must not truncate itself
 * (a truncated label's bounds are then those of the full text, which only errs on the safe side).
 */
export function vegaTextWidth(widths: AdvanceWidths): (item: TextItem, text: unknown) => number {
  return (item, text) => {
    const size = item.fontSize != null ? +item.fontSize || 0 : 11;
    let em = 0;
    for (const ch of text == null ? "" : String(text).trim()) em += widths(ch.codePointAt(0)!);
    return em * size;
  };
}
