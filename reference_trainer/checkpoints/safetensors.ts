/**
 * A small safetensors reader and writer: an 8-byte little-endian header length, a JSON header
 * (`{name: {dtype, shape, data_offsets}, "__metadata__": {string: string}}`) and the raw
 * little-endian tensor bytes. Reading validates every field, so a truncated or corrupt file
 * fails with a message naming the file and what is wrong instead of yielding garbage.
 *
 * @module
 */

import { TrainerError } from "../model/mod.ts";

/** Element types this module reads and writes. */
export type Dtype = "F32" | "F64" | "BF16" | "I64";

/** Typed array carrying a tensor's elements (bf16 as raw 16-bit patterns). */
export type TensorData = Float32Array | Float64Array | Uint16Array | BigInt64Array;

/** One tensor: dtype, shape and row-major data. */
export interface Tensor {
  /** Element type. */
  dtype: Dtype;
  /** Shape (empty for a scalar). */
  shape: number[];
  /** Row-major elements; length equals the product of `shape`. */
  data: TensorData;
}

/** A decoded file: tensors by name and the string metadata map. */
export interface SafetensorsFile {
  /** Tensors in header order. */
  tensors: Map<string, Tensor>;
  /** `__metadata__` (empty when absent). */
  metadata: Record<string, string>;
}

/** A file that is not valid safetensors (a run-time failure); the message names the file. */
export class SafetensorsError extends TrainerError {}

const DTYPE_SIZE: Record<Dtype, number> = { F32: 4, F64: 8, BF16: 2, I64: 8 };

function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** Builds a tensor, checking that the data length matches the shape. */
export function tensor(dtype: Dtype, shape: number[], data: TensorData): Tensor {
  if (data.length !== numel(shape)) {
    throw new SafetensorsError(
      `tensor of shape ${JSON.stringify(shape)} needs ${numel(shape)} elements, got ${data.length}`,
    );
  }
  return { dtype, shape: [...shape], data };
}

/** Encodes tensors (written in name order, so equal inputs give equal bytes) and metadata. */
export function encodeSafetensors(
  tensors: Map<string, Tensor>,
  metadata: Record<string, string> = {},
): Uint8Array {
  const names = [...tensors.keys()].sort();
  const header: Record<string, unknown> = {};
  if (Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  let offset = 0;
  for (const name of names) {
    const t = tensors.get(name)!;
    const bytes = t.data.byteLength;
    if (bytes !== numel(t.shape) * DTYPE_SIZE[t.dtype]) {
      throw new SafetensorsError(`tensor ${name}: ${bytes} bytes do not fit ${t.dtype} ${t.shape}`);
    }
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  while ((8 + json.length) % 8 !== 0) json += " ";
  const headerBytes = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + headerBytes.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerBytes.length), true);
  out.set(headerBytes, 8);
  let at = 8 + headerBytes.length;
  for (const name of names) {
    const d = tensors.get(name)!.data;
    out.set(new Uint8Array(d.buffer, d.byteOffset, d.byteLength), at);
    at += d.byteLength;
  }
  return out;
}

function copyData(dtype: Dtype, bytes: Uint8Array): TensorData {
  const copy = bytes.slice().buffer;
  switch (dtype) {
    case "F32":
      return new Float32Array(copy);
    case "F64":
      return new Float64Array(copy);
    case "BF16":
      return new Uint16Array(copy);
    case "I64":
      return new BigInt64Array(copy);
  }
}

/** Decodes and validates a safetensors buffer; `where` (a path) prefixes every error. */
export function decodeSafetensors(bytes: Uint8Array, where: string): SafetensorsFile {
  const fail = (msg: string): never => {
    throw new SafetensorsError(`${where}: not a valid safetensors file: ${msg}`);
  };
  if (bytes.length < 8) fail(`${bytes.length} bytes, shorter than the 8-byte header length`);
  const headerLen = new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true);
  if (headerLen > BigInt(bytes.length - 8)) {
    fail(
      `header length ${headerLen} runs past the end of the file (${bytes.length} bytes; truncated?)`,
    );
  }
  const hl = Number(headerLen);
  let header: unknown;
  try {
    header = JSON.parse(
      new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(8, 8 + hl)),
    );
  } catch {
    fail("header is not valid UTF-8 JSON");
  }
  if (typeof header !== "object" || header === null || Array.isArray(header)) {
    fail("header is not a JSON object");
  }
  const dataStart = 8 + hl;
  const dataLen = bytes.length - dataStart;
  const entries: { name: string; dtype: Dtype; shape: number[]; start: number; end: number }[] = [];
  let metadata: Record<string, string> = {};
  for (const [name, raw] of Object.entries(header as Record<string, unknown>)) {
    if (name === "__metadata__") {
      if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
        fail("__metadata__ is not an object");
      }
      for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
        if (typeof v !== "string") fail(`__metadata__.${k} is not a string`);
      }
      metadata = raw as Record<string, string>;
      continue;
    }
    const e = raw as Record<string, unknown>;
    if (typeof e !== "object" || e === null) fail(`entry ${name} is not an object`);
    const dtype = e.dtype as Dtype;
    if (typeof dtype !== "string" || !(dtype in DTYPE_SIZE)) {
      fail(`tensor ${name} has unsupported dtype ${JSON.stringify(e.dtype)}`);
    }
    const shape = e.shape;
    if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
      fail(`tensor ${name} has an invalid shape`);
    }
    const off = e.data_offsets;
    if (
      !Array.isArray(off) || off.length !== 2 || !off.every((x) => Number.isInteger(x) && x >= 0) ||
      off[0] > off[1]
    ) {
      fail(`tensor ${name} has invalid data_offsets`);
    }
    const [start, end] = off as [number, number];
    const expected = numel(shape as number[]) * DTYPE_SIZE[dtype];
    if (end - start !== expected) {
      fail(
        `tensor ${name}: ${end - start} bytes for ${dtype} ${
          JSON.stringify(shape)
        } (needs ${expected})`,
      );
    }
    if (end > dataLen) fail(`tensor ${name} runs past the end of the data (file truncated?)`);
    entries.push({ name, dtype, shape: shape as number[], start, end });
  }
  const sorted = [...entries].sort((a, b) => a.start - b.start || a.end - b.end);
  let cursor = 0;
  for (const e of sorted) {
    if (e.start !== cursor) fail(`tensor ${e.name} does not start where the previous one ends`);
    cursor = e.end;
  }
  if (cursor !== dataLen) fail(`${dataLen - cursor} stray bytes after the last tensor`);
  const tensors = new Map<string, Tensor>();
  for (const e of entries) {
    const slice = bytes.subarray(dataStart + e.start, dataStart + e.end);
    tensors.set(e.name, { dtype: e.dtype, shape: e.shape, data: copyData(e.dtype, slice) });
  }
  return { tensors, metadata };
}
