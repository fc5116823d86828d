/**
 * A small independent PNG decoder for tests (8-bit RGB/RGBA, non-interlaced — what resvg
 * writes), so a test can check a render is a real, decodable image and look at its pixels.
 *
 * @module
 */

import { inflateSync } from "node:zlib";

/** A decoded image: RGBA pixels, row-major. */
export interface DecodedPng {
  /** Width in pixels (from IHDR). */
  width: number;
  /** Height in pixels (from IHDR). */
  height: number;
  /** RGBA bytes, `width * height * 4`. */
  rgba: Uint8Array;
}

const SIGNATURE = [137, 80, 78, 71, 13, 10, 26, 10];

/** Decodes PNG bytes; throws on anything malformed or unsupported. */
export function decodePng(bytes: Uint8Array): DecodedPng {
  for (let i = 0; i < 8; i++) {
    if (bytes[i] !== SIGNATURE[i]) throw new Error("not a PNG: bad signature");
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let offset = 8;
  let width = 0, height = 0, colorType = -1;
  const idat: Uint8Array[] = [];
  let sawEnd = false;
  while (offset < bytes.length) {
    const length = view.getUint32(offset);
    const type = String.fromCharCode(...bytes.subarray(offset + 4, offset + 8));
    const data = bytes.subarray(offset + 8, offset + 8 + length);
    if (offset === 8 && type !== "IHDR") throw new Error("first chunk is not IHDR");
    if (type === "IHDR") {
      width = view.getUint32(offset + 8);
      height = view.getUint32(offset + 12);
      const depth = data[8];
      colorType = data[9];
      if (depth !== 8 || (colorType !== 6 && colorType !== 2) || data[12] !== 0) {
        throw new Error(
          `unsupported PNG: depth ${depth}, colour type ${colorType}, interlace ${data[12]}`,
        );
      }
    } else if (type === "IDAT") idat.push(data);
    else if (type === "IEND") {
      sawEnd = true;
      break;
    }
    offset += 12 + length;
  }
  if (!sawEnd) throw new Error("truncated PNG: no IEND");
  const channels = colorType === 6 ? 4 : 3;
  const joined = new Uint8Array(idat.reduce((n, d) => n + d.length, 0));
  let at = 0;
  for (const d of idat) {
    joined.set(d, at);
    at += d.length;
  }
  const raw = new Uint8Array(inflateSync(joined));
  const stride = width * channels;
  if (raw.length !== height * (stride + 1)) throw new Error(`bad image data length ${raw.length}`);
  const out = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const left = x >= channels ? out[y * stride + x - channels] : 0;
      const up = y > 0 ? out[(y - 1) * stride + x] : 0;
      const upLeft = y > 0 && x >= channels ? out[(y - 1) * stride + x - channels] : 0;
      let predictor = 0;
      if (filter === 1) predictor = left;
      else if (filter === 2) predictor = up;
      else if (filter === 3) predictor = (left + up) >> 1;
      else if (filter === 4) {
        const p = left + up - upLeft;
        const pa = Math.abs(p - left), pb = Math.abs(p - up), pc = Math.abs(p - upLeft);
        predictor = pa <= pb && pa <= pc ? left : pb <= pc ? up : upLeft;
      } else if (filter !== 0) throw new Error(`bad filter ${filter} on row ${y}`);
      out[y * stride + x] = (line[x] + predictor) & 0xff;
    }
  }
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0; i < width * height; i++) {
    rgba[i * 4] = out[i * channels];
    rgba[i * 4 + 1] = out[i * channels + 1];
    rgba[i * 4 + 2] = out[i * channels + 2];
    rgba[i * 4 + 3] = channels === 4 ? out[i * channels + 3] : 255;
  }
  return { width, height, rgba };
}

/** Pixels darker than `threshold` (all channels) inside a rectangle. */
export function darkPixels(
  image: DecodedPng,
  rect: { x: number; y: number; width: number; height: number },
  threshold = 100,
): number {
  let n = 0;
  for (let y = rect.y; y < Math.min(image.height, rect.y + rect.height); y++) {
    for (let x = rect.x; x < Math.min(image.width, rect.x + rect.width); x++) {
      const i = (y * image.width + x) * 4;
      if (
        image.rgba[i] < threshold && image.rgba[i + 1] < threshold && image.rgba[i + 2] < threshold
      ) n++;
    }
  }
  return n;
}
