/**
 * Reader of TensorBoard event files (`events.out.tfevents.*`): TFRecord framing (length,
 * masked CRC-32C of the length, payload, masked CRC-32C of the payload) around `Event`
 * protobufs, of which only `step` (field 2) and `summary.value[]` (field 5 → 1) matter. A value
 * is read from `simple_value` (float32) or a one-element `tensor` (float, double, half, int32,
 * int64). The tag is the metric name; `loss` is aliased from `lm loss`, `train/loss`, ... when
 * absent. A path may be one event file or a folder of them (read in name order). Steps may count
 * samples (`step_unit: samples`, DeepSpeed's monitor), converted as for deepspeed-csv.
 *
 * @module
 */

import { SeriesBuilder } from "./_builder.ts";
import { decodeFields, float32At, float64At, maskedCrc32c, toInt64 } from "./_protobuf.ts";
import { parseSources, readSources } from "./_sources.ts";
import { type MetricSeries, READER_CODES, type ReadOptions } from "./series.ts";

/** One event file's bytes with the name shown in diagnostics. */
export interface EventFileSource {
  /** File name shown in diagnostics. */
  name: string;
  /** File content. */
  bytes: Uint8Array;
}

/**
 * Parses TensorBoard event files into one series. `options.step_unit` says what an event's step
 * counts, as for deepspeed-csv: `step` (the default; Megatron-style writers log iterations) or
 * `samples` (DeepSpeed's tensorboard monitor logs `engine.global_samples`), which is divided by
 * `options.samples_per_step` (required then; a count off the optimizer-step grid is an error).
 */
export function parseTensorboard(
  sources: EventFileSource[],
  options: ReadOptions = {},
): MetricSeries {
  return parseSources(sources, options, "step", readOne);
}

/** Reads an event file, or every `*tfevents*` file of a folder. */
export function readTensorboard(
  path: string,
  options: ReadOptions = {},
): Promise<MetricSeries> {
  return readSources(
    path,
    (name) => name.includes("tfevents"),
    async (name, file): Promise<EventFileSource> => ({ name, bytes: await Deno.readFile(file) }),
    (sources) => parseTensorboard(sources, options),
  );
}

function readOne(
  builder: SeriesBuilder,
  source: EventFileSource,
  perStep: number | undefined,
): void {
  const bytes = source.bytes;
  const data = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let pos = 0;
  let record = 0;
  while (pos < bytes.length) {
    record++;
    const where = `${source.name} record ${record}`;
    if (pos + 12 > bytes.length) {
      corrupt(builder, where, "cut off inside the record header", true);
      return;
    }
    const length = Number(data.getBigUint64(pos, true));
    const lengthCrc = data.getUint32(pos + 8, true);
    if (maskedCrc32c(bytes.subarray(pos, pos + 8)) !== lengthCrc) {
      corrupt(builder, where, "length checksum mismatch", false);
      return;
    }
    const start = pos + 12;
    if (start + length + 4 > bytes.length) {
      corrupt(builder, where, "cut off inside the payload", true);
      return;
    }
    const payload = bytes.subarray(start, start + length);
    if (maskedCrc32c(payload) !== data.getUint32(start + length, true)) {
      corrupt(builder, where, "payload checksum mismatch", false);
      pos = start + length + 4;
      continue;
    }
    pos = start + length + 4;
    try {
      readEvent(builder, payload, source.name, record, perStep);
    } catch (error) {
      corrupt(builder, where, `not an Event protobuf (${(error as Error).message})`, false);
    }
  }
}

function readEvent(
  builder: SeriesBuilder,
  payload: Uint8Array,
  name: string,
  record: number,
  perStep: number | undefined,
): void {
  const where = `${name} record ${record}`;
  let step = 0;
  const values: [string, number][] = [];
  for (const field of decodeFields(payload)) {
    if (field.field === 2 && field.wire === 0) step = toInt64(field.int);
    else if (field.field === 5 && field.wire === 2) {
      for (const entry of decodeFields(field.bytes)) {
        if (entry.field !== 1 || entry.wire !== 2) continue;
        const value = readValue(entry.bytes);
        if (value !== null) values.push(value);
      }
    }
  }
  if (values.length === 0) return; // file_version, graph, metadata-only events
  const optimizerStep = builder.stepOf(step, perStep, where);
  if (optimizerStep === undefined) return;
  if (!Number.isInteger(optimizerStep) || optimizerStep < 0) {
    builder.note(
      READER_CODES.invalidStep,
      "error",
      "records without a non-negative integer step",
      `${where}: step ${optimizerStep}`,
    );
    return;
  }
  builder.beginRecord(optimizerStep, record, `${name} record`);
  for (const [tag, value] of values) {
    if (!Number.isFinite(value)) {
      builder.note(
        READER_CODES.nonFinite,
        "error",
        "NaN or infinite metric values",
        `${where} step ${step}: ${tag}=${value}`,
        step,
        tag,
      );
    }
    builder.set(tag, value);
  }
}

/** Summary.Value → [tag, scalar] or null when it holds no scalar. */
function readValue(bytes: Uint8Array): [string, number] | null {
  let tag: string | null = null;
  let value: number | null = null;
  for (const field of decodeFields(bytes)) {
    if (field.field === 1 && field.wire === 2) tag = new TextDecoder().decode(field.bytes);
    else if (field.field === 2 && field.wire === 5) value = float32At(field.bytes);
    else if (field.field === 8 && field.wire === 2) value = readScalarTensor(field.bytes);
  }
  return tag !== null && value !== null ? [tag, value] : null;
}

const DT_FLOAT = 1;
const DT_DOUBLE = 2;
const DT_INT32 = 3;
const DT_INT64 = 9;
const DT_HALF = 19;

/** TensorProto with exactly one element → that element; anything else → null. */
function readScalarTensor(bytes: Uint8Array): number | null {
  let dtype = 0;
  const found: number[] = [];
  let content: Uint8Array | null = null;
  for (const field of decodeFields(bytes)) {
    if (field.field === 1 && field.wire === 0) dtype = field.int;
    else if (field.field === 4 && field.wire === 2) content = field.bytes;
    else if (field.field === 5) {
      // float_val: packed (wire 2) or one per field (wire 5)
      const b = field.bytes;
      for (let i = 0; i + 4 <= b.length; i += 4) found.push(float32At(b, i));
    } else if (field.field === 6) {
      const b = field.bytes;
      for (let i = 0; i + 8 <= b.length; i += 8) found.push(float64At(b, i));
    } else if ((field.field === 7 || field.field === 10 || field.field === 13)) {
      if (field.wire === 0) found.push(toSigned(field.int, field.field, dtype));
      else if (field.wire === 2) {
        let p = 0;
        while (p < field.bytes.length) {
          let v = 0;
          let scale = 1;
          while (true) {
            const byte = field.bytes[p++];
            v += (byte & 0x7f) * scale;
            scale *= 128;
            if ((byte & 0x80) === 0) break;
          }
          found.push(toSigned(v, field.field, dtype));
        }
      }
    }
  }
  if (content !== null && content.length > 0) {
    if (dtype === DT_FLOAT && content.length === 4) return float32At(content);
    if (dtype === DT_DOUBLE && content.length === 8) return float64At(content);
    if (dtype === DT_INT32 && content.length === 4) {
      return new DataView(content.buffer, content.byteOffset, 4).getInt32(0, true);
    }
    if (dtype === DT_INT64 && content.length === 8) {
      return Number(new DataView(content.buffer, content.byteOffset, 8).getBigInt64(0, true));
    }
    if (dtype === DT_HALF && content.length === 2) {
      return halfToNumber(content[0] | content[1] << 8);
    }
    return null;
  }
  return found.length === 1 ? found[0] : null;
}

function toSigned(v: number, field: number, dtype: number): number {
  if (field === 13 || dtype === DT_HALF) return halfToNumber(v);
  if (field === 7) return v >= 2 ** 31 ? toInt64(v) : v;
  return toInt64(v);
}

function halfToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const fraction = h & 0x3ff;
  if (exponent === 0) return sign * 2 ** -14 * (fraction / 1024);
  if (exponent === 31) return fraction ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * 2 ** (exponent - 15) * (1 + fraction / 1024);
}

function corrupt(builder: SeriesBuilder, where: string, why: string, truncated: boolean): void {
  builder.note(
    truncated ? READER_CODES.truncated : READER_CODES.corruptRecord,
    "error",
    truncated ? "the last record is cut off" : "corrupt event records",
    `${where}: ${why}`,
  );
}
