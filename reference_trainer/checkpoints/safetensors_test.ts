import assert from "node:assert/strict";
import {
  decodeSafetensors,
  encodeSafetensors,
  SafetensorsError,
  type Tensor,
  tensor,
} from "./safetensors.ts";

function sample(): Map<string, Tensor> {
  return new Map<string, Tensor>([
    ["b.f32", tensor("F32", [2, 3], new Float32Array([1, 2, 3, 4, 5, -0.5]))],
    ["a.bf16", tensor("BF16", [3], new Uint16Array([0x3f80, 0x4000, 0xbf80]))],
    ["c.step", tensor("I64", [], new BigInt64Array([42n]))],
    ["d.f64", tensor("F64", [1], new Float64Array([Math.PI]))],
  ]);
}

function header(bytes: Uint8Array): Record<string, unknown> {
  const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  return JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
}

function withHeader(h: unknown, data: Uint8Array): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(h));
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

Deno.test("encodeSafetensors() round-trips every dtype and the metadata, byte-stable", () => {
  const bytes = encodeSafetensors(sample(), { k: "v" });
  assert.deepEqual(encodeSafetensors(sample(), { k: "v" }), bytes);
  assert.equal(Number(new DataView(bytes.buffer).getBigUint64(0, true)) % 8, 0);
  const file = decodeSafetensors(bytes, "x.safetensors");
  assert.deepEqual(file.metadata, { k: "v" });
  for (const [name, t] of sample()) assert.deepEqual(file.tensors.get(name), t);
  assert.deepEqual(Object.keys(header(bytes)), [
    "__metadata__",
    "a.bf16",
    "b.f32",
    "c.step",
    "d.f64",
  ]);
});

Deno.test("decodeSafetensors() names a truncated file", () => {
  const bytes = encodeSafetensors(sample());
  assert.throws(
    () => decodeSafetensors(bytes.subarray(0, bytes.length - 4), "t.safetensors"),
    (e: Error) => e instanceof SafetensorsError && /t.safetensors: .*truncated/.test(e.message),
  );
  assert.throws(
    () => decodeSafetensors(bytes.subarray(0, 5), "t"),
    /shorter than the 8-byte header/,
  );
  assert.throws(
    () => decodeSafetensors(bytes.subarray(0, 20), "t"),
    /runs past the end of the file/,
  );
});

Deno.test("decodeSafetensors() rejects bad headers, holes, overlaps and stray bytes", () => {
  const data = new Uint8Array(8);
  const f32 = (offsets: number[]) => ({ dtype: "F32", shape: [2], data_offsets: offsets });
  const cases: [unknown, Uint8Array, RegExp][] = [
    [{ a: f32([0, 8]) }, new Uint8Array(12), /4 stray bytes/],
    [{ a: f32([0, 8]), b: f32([4, 12]) }, new Uint8Array(12), /does not start where/],
    [{ a: { dtype: "F16", shape: [2], data_offsets: [0, 4] } }, data, /unsupported dtype/],
    [{ a: f32([0, 4]) }, data, /4 bytes for F32 \[2\]/],
    [{ a: { dtype: "F32", shape: [-1], data_offsets: [0, 8] } }, data, /invalid shape/],
    [{ __metadata__: { x: 1 } }, new Uint8Array(0), /__metadata__.x is not a string/],
    [[1, 2], data, /not a JSON object/],
  ];
  for (const [h, d, re] of cases) assert.throws(() => decodeSafetensors(withHeader(h, d), "f"), re);
  const junk = withHeader({}, new Uint8Array(0));
  junk[9] = 0xff;
  assert.throws(() => decodeSafetensors(junk, "f"), /not valid UTF-8 JSON/);
});

Deno.test("tensor() refuses data that does not fit the shape", () => {
  assert.throws(() => tensor("F32", [2, 2], new Float32Array(3)), /needs 4 elements, got 3/);
});
