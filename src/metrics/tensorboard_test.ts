import assert from "node:assert/strict";
import { crc32c, encodeVarint, maskedCrc32c } from "./_protobuf.ts";
import { READER_CODES } from "./series.ts";
import { readMetrics } from "./read.ts";
import { parseTensorboard, readTensorboard } from "./tensorboard.ts";
import { withTempDir } from "../../test/_testing/metrics_fixtures.ts";

function field(number: number, wire: number, payload: number[]): number[] {
  const key = encodeVarint(number * 8 + wire);
  if (wire === 2) return [...key, ...encodeVarint(payload.length), ...payload];
  return [...key, ...payload];
}

function bytesOf(view: (d: DataView) => void, size: number): number[] {
  const buf = new ArrayBuffer(size);
  view(new DataView(buf));
  return [...new Uint8Array(buf)];
}

const f32 = (x: number) => bytesOf((d) => d.setFloat32(0, x, true), 4);
const f64 = (x: number) => bytesOf((d) => d.setFloat64(0, x, true), 8);
const text = (s: string) => [...new TextEncoder().encode(s)];

function simpleValue(tag: string, x: number): number[] {
  return field(1, 2, [...field(1, 2, text(tag)), ...field(2, 5, f32(x))]);
}

function doubleTensorValue(tag: string, x: number): number[] {
  const tensor = [...field(1, 0, encodeVarint(2)), ...field(4, 2, f64(x))];
  return field(1, 2, [...field(1, 2, text(tag)), ...field(8, 2, tensor)]);
}

function event(step: number, values: number[][]): number[] {
  return [
    ...field(1, 1, f64(1700000000.5)),
    ...field(2, 0, encodeVarint(step)),
    ...field(5, 2, values.flat()),
  ];
}

function record(payload: number[]): number[] {
  const data = new Uint8Array(payload);
  const length = new Uint8Array(bytesOf((d) => d.setBigUint64(0, BigInt(data.length), true), 8));
  return [
    ...length,
    ...bytesOf((d) => d.setUint32(0, maskedCrc32c(length), true), 4),
    ...data,
    ...bytesOf((d) => d.setUint32(0, maskedCrc32c(data), true), 4),
  ];
}

function eventFile(): Uint8Array {
  return new Uint8Array([
    ...record([...field(1, 1, f64(1.5)), ...field(3, 2, text("brain.Event:2"))]),
    ...record(event(1, [simpleValue("lm loss", 2.5123), doubleTensorValue("lr", 1.23456789e-4)])),
    ...record(event(2, [simpleValue("lm loss", 2.4)])),
    ...record(event(2, [doubleTensorValue("lr", 2.5e-4)])),
  ]);
}

Deno.test("crc32c() matches the Castagnoli check value", () => {
  assert.equal(crc32c(new TextEncoder().encode("123456789")), 0xe3069283);
});

Deno.test("parseTensorboard() reads simple_value and tensor scalars by step", () => {
  const series = parseTensorboard([{ name: "events.out.tfevents.1", bytes: eventFile() }]);
  assert.deepEqual([...series.steps], [1, 2]);
  assert.deepEqual([...series.values["lm loss"]], [Math.fround(2.5123), Math.fround(2.4)]);
  assert.deepEqual([...series.values.loss], [Math.fround(2.5123), Math.fround(2.4)]);
  assert.deepEqual([...series.values.lr], [1.23456789e-4, 2.5e-4]);
  const codes = series.diagnostics.map((d) => d.code);
  assert.deepEqual(codes, [READER_CODES.lossAlias], "events of one step merge silently");
});

Deno.test("parseTensorboard() names a corrupt payload and a cut-off record", () => {
  const bytes = eventFile();
  const corrupt = bytes.slice();
  corrupt[corrupt.length - 10] ^= 0xff;
  const a = parseTensorboard([{ name: "e", bytes: corrupt }]);
  assert.ok(a.diagnostics.some((d) => d.code === READER_CODES.corruptRecord));
  const b = parseTensorboard([{ name: "e", bytes: bytes.slice(0, bytes.length - 6) }]);
  assert.ok(b.diagnostics.some((d) => d.code === READER_CODES.truncated));
  assert.deepEqual([...b.steps], [1, 2]);
});

Deno.test("readTensorboard() reads every event file of a folder", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeFile(`${dir}/events.out.tfevents.1.host`, eventFile());
    await Deno.writeTextFile(`${dir}/notes.txt`, "ignored");
    const series = await readTensorboard(dir);
    assert.deepEqual([...series.steps], [1, 2]);
  });
});

const REAL_TB = new URL("./testdata/deepspeed_tensorboard", import.meta.url).pathname;
const REAL_JSONL = new URL("./testdata/deepspeed_parity.jsonl", import.meta.url).pathname;

Deno.test("readTensorboard() reads DeepSpeed's real tensorboard monitor files in samples", async () => {
  // DeepSpeed 0.19.8, global batch 8; one event file per process (split 1-3, resume 4-6).
  const losses = (await Deno.readTextFile(REAL_JSONL)).trim().split("\n").map((l) =>
    JSON.parse(l).loss
  );
  const series = await readMetrics(REAL_TB, {
    format: "tensorboard",
    step_unit: "samples",
    samples_per_step: 8,
  });
  assert.deepEqual([...series.steps], [1, 2, 3, 4, 5, 6]);
  // simple_value is float32: the monitor holds the adapter's float64 losses rounded once.
  assert.deepEqual([...series.values.loss], losses.map(Math.fround));
  assert.deepEqual(
    [...series.values["Train/Samples/lr"]],
    [0, 0.0003, 0.0006, 0.0009, 0.0012, 0.0015].map(Math.fround),
  );
  assert.deepEqual(series.diagnostics.map((d) => d.code), [READER_CODES.lossAlias]);
});

Deno.test("readTensorboard() honours step_unit like deepspeed-csv", async () => {
  // Default: steps as written (here global samples).
  const raw = await readTensorboard(REAL_TB);
  assert.deepEqual([...raw.steps], [8, 16, 24, 32, 40, 48]);
  const asSteps = await readMetrics(REAL_TB, { format: "tensorboard", step_unit: "step" });
  assert.deepEqual([...asSteps.steps], [8, 16, 24, 32, 40, 48]);
  // samples without samples_per_step: an error, as for deepspeed-csv.
  const missing = await readMetrics(REAL_TB, { format: "tensorboard", step_unit: "samples" });
  const m = missing.diagnostics.find((d) => d.code === READER_CODES.samplesPerStepMissing);
  assert.equal(m?.level, "error");
  // A sample count off the optimizer-step grid is named, and the record dropped.
  const off = await readMetrics(REAL_TB, {
    format: "tensorboard",
    step_unit: "samples",
    samples_per_step: 16,
  });
  const d = off.diagnostics.find((x) => x.code === READER_CODES.samplesNotAligned);
  assert.equal(d?.level, "error");
  assert.equal(d?.count, 6, "3 off-grid steps x 2 events (lr, train_loss)");
  assert.deepEqual([...off.steps], [1, 2, 3]);
});
