/**
 * The little protobuf and TFRecord decoding the TensorBoard reader needs: varints, fields by
 * number, and CRC-32C (Castagnoli) with TFRecord's mask.
 *
 * @module
 */

/** One decoded field: `value` is a number for varint/fixed wire types, bytes for length-delimited. */
export interface ProtoField {
  /** Field number. */
  field: number;
  /** Wire type (0 varint, 1 fixed64, 2 length-delimited, 5 fixed32). */
  wire: number;
  /** Varint value (as a number; exact up to 2^53). */
  int: number;
  /** Raw bytes of fixed32/fixed64/length-delimited fields. */
  bytes: Uint8Array;
}

const EMPTY = new Uint8Array(0);

/** Decodes the top-level fields of one message; throws on malformed input. */
export function decodeFields(buf: Uint8Array): ProtoField[] {
  const out: ProtoField[] = [];
  let pos = 0;
  while (pos < buf.length) {
    const [key, afterKey] = readVarint(buf, pos);
    pos = afterKey;
    const field = Math.floor(key / 8);
    const wire = key % 8;
    if (wire === 0) {
      const [int, next] = readVarint(buf, pos);
      out.push({ field, wire, int, bytes: EMPTY });
      pos = next;
    } else if (wire === 1 || wire === 5) {
      const size = wire === 1 ? 8 : 4;
      if (pos + size > buf.length) throw new Error("fixed field past the end");
      out.push({ field, wire, int: 0, bytes: buf.subarray(pos, pos + size) });
      pos += size;
    } else if (wire === 2) {
      const [size, next] = readVarint(buf, pos);
      if (next + size > buf.length) throw new Error("length-delimited field past the end");
      out.push({ field, wire, int: 0, bytes: buf.subarray(next, next + size) });
      pos = next + size;
    } else {
      throw new Error(`unsupported wire type ${wire}`);
    }
  }
  return out;
}

/** Reads a varint at `pos`; returns [value, next position]. */
function readVarint(buf: Uint8Array, pos: number): [number, number] {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 10; i++) {
    if (pos >= buf.length) throw new Error("varint past the end");
    const byte = buf[pos++];
    value += (byte & 0x7f) * scale;
    if ((byte & 0x80) === 0) return [value, pos];
    scale *= 128;
  }
  throw new Error("varint longer than 10 bytes");
}

/** Varint as a signed int64 (two's complement) where it fits a double. */
export function toInt64(value: number): number {
  return value >= 2 ** 63 ? value - 2 ** 64 : value;
}

const view = new DataView(new ArrayBuffer(8));

/** Little-endian float32 from 4 bytes. */
export function float32At(bytes: Uint8Array, offset = 0): number {
  for (let i = 0; i < 4; i++) view.setUint8(i, bytes[offset + i]);
  return view.getFloat32(0, true);
}

/** Little-endian float64 from 8 bytes. */
export function float64At(bytes: Uint8Array, offset = 0): number {
  for (let i = 0; i < 8; i++) view.setUint8(i, bytes[offset + i]);
  return view.getFloat64(0, true);
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32C of `bytes`. */
export function crc32c(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) crc = CRC_TABLE[(crc ^ bytes[i]) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** TFRecord's masked CRC-32C. */
export function maskedCrc32c(bytes: Uint8Array): number {
  const crc = crc32c(bytes);
  return ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

/** Encodes a varint (for tests and fixtures). */
export function encodeVarint(value: number): number[] {
  const out: number[] = [];
  let v = value;
  while (v >= 128) {
    out.push((v % 128) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}
