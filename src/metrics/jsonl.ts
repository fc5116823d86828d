/**
 * Strict reader of the metrics JSONL contract (README.md, "The trainer contract"): step records
 * `{"step": 21, "loss": 2.71, ...}` (every numeric field a metric, `loss` required) and event
 * records `{"event": "saved", "step": 20, "digests": {...}}`. Bad content becomes diagnostics,
 * never an exception: NaN/Infinity literals (which JSON cannot hold) and `"nan"` strings, a
 * non-numeric or missing loss, duplicate and backwards steps, unparseable and truncated lines.
 *
 * @module
 */

import { dirname } from "node:path";
import { SeriesBuilder } from "./_builder.ts";
import { FlatRecordScanner } from "./_flat_scanner.ts";
import { emptySeries, MAX_METRICS_LINE_BYTES, type MetricSeries, READER_CODES } from "./series.ts";
import { resolveTensorFiles } from "./tensors_file.ts";

const NON_FINITE_STRING = /^\s*([+-]?)(nan|inf|infinity)\s*$/i;
// Bare NaN / Infinity tokens in value position (Python's json.dumps writes them).
const NON_FINITE_LITERAL = /([:[,]\s*)(-?Infinity|NaN)(?=\s*[,}\]])/g;

/** Parses the text of a metrics JSONL file. */
export function parseJsonl(text: string): MetricSeries {
  const bytes = new TextEncoder().encode(text);
  return parseJsonlBytes(bytes, bytes.length === text.length ? text : null);
}

/**
 * Reads a metrics JSONL file; a missing file gives a series with `metrics-missing-file`. Events
 * naming a `tensors_file` get its map as `tensors`, read once here (see `tensors_file.ts`).
 */
export async function readJsonl(path: string, loss?: string): Promise<MetricSeries> {
  let bytes: Uint8Array;
  try {
    bytes = await Deno.readFile(path);
  } catch (error) {
    return unreadable(path, error);
  }
  return resolveTensorFiles(parseJsonlBytes(bytes, undefined, loss), dirname(path));
}

/**
 * Parses the UTF-8 bytes of a metrics JSONL file. `ascii` is the same content decoded, when it
 * is pure ASCII (byte and string offsets then agree); by default it is decoded here.
 */
export function parseJsonlBytes(
  bytes: Uint8Array,
  ascii: string | null | undefined = undefined,
  loss?: string,
): MetricSeries {
  const decoder = new TextDecoder();
  if (ascii === undefined) {
    const text = decoder.decode(bytes);
    ascii = text.length === bytes.length ? text : null;
  }
  const builder = new SeriesBuilder(loss);
  builder.startSource();
  const length = bytes.length;
  // The last non-blank line decides between "truncated" and "unparseable".
  let lastContent = length;
  while (lastContent > 0 && isBlank(bytes[lastContent - 1])) lastContent--;
  let start = 0;
  let lineNo = 0;
  const fast = new FlatRecordScanner(builder, ascii);
  while (start < length) {
    let end = bytes.indexOf(10, start);
    if (end < 0) end = length;
    lineNo++;
    let stop = end;
    if (stop > start && bytes[stop - 1] === 13) stop--;
    if (stop - start > MAX_METRICS_LINE_BYTES) {
      builder.note(
        READER_CODES.lineTooLong,
        "error",
        `a line is longer than ${MAX_METRICS_LINE_BYTES} bytes (not read)`,
        `line ${lineNo}: ${stop - start} bytes`,
      );
      start = end + 1;
      continue;
    }
    if (stop > start && !fast.scan(bytes, start, stop, lineNo)) {
      const isLast = end >= lastContent;
      const line = ascii !== null
        ? ascii.slice(start, stop)
        : decoder.decode(bytes.subarray(start, stop));
      readLine(builder, line, lineNo, isLast, end === length);
    }
    start = end + 1;
  }
  return builder.finish();
}

/** A series holding only the `metrics-missing-file` diagnostic for `path`. */
export function unreadable(path: string, error: unknown): MetricSeries {
  const why = error instanceof Deno.errors.NotFound
    ? "does not exist"
    : `cannot be read (${error instanceof Error ? error.message : String(error)})`;
  return emptySeries([{
    level: "error",
    code: READER_CODES.missing,
    message: `metrics source ${path} ${why}`,
  }]);
}

function isBlank(code: number): boolean {
  return code === 10 || code === 13 || code === 32 || code === 9;
}

function readLine(
  builder: SeriesBuilder,
  line: string,
  lineNo: number,
  isLast: boolean,
  unterminated: boolean,
): void {
  let record: unknown;
  let literalNonFinite = false;
  try {
    record = JSON.parse(line);
  } catch {
    const repaired = line.replace(NON_FINITE_LITERAL, '$1"$2"');
    if (repaired !== line) {
      try {
        record = JSON.parse(repaired);
        literalNonFinite = true;
      } catch {
        record = undefined;
      }
    }
  }
  if (record === null || typeof record !== "object" || Array.isArray(record)) {
    if (record === undefined && line.trim() === "") return;
    const shown = line.length > 60 ? `${line.slice(0, 60)}...` : line;
    if (isLast && record === undefined) {
      builder.note(
        READER_CODES.truncated,
        "error",
        "the last line is cut off or unparseable",
        `line ${lineNo}${unterminated ? " (no final newline)" : ""}: ${shown}`,
      );
    } else {
      builder.note(
        READER_CODES.unparseable,
        "error",
        "lines that are not JSON objects",
        `line ${lineNo}: ${shown}`,
      );
    }
    return;
  }
  const fields = record as Record<string, unknown>;
  const rawStep = fields.step;
  if (typeof fields.event === "string") {
    const step = typeof rawStep === "number" && Number.isInteger(rawStep) ? rawStep : null;
    builder.addEvent({ event: fields.event, step, line: lineNo, fields });
    return;
  }
  if (typeof rawStep !== "number" || !Number.isInteger(rawStep) || rawStep < 0) {
    builder.note(
      READER_CODES.invalidStep,
      "error",
      "records without a non-negative integer step",
      `line ${lineNo}: step ${JSON.stringify(rawStep) ?? "missing"}`,
    );
    return;
  }
  builder.beginRecord(rawStep, lineNo);
  for (const key in fields) {
    if (key === "step") continue;
    const value = fields[key];
    if (typeof value === "number") {
      if (!Number.isFinite(value)) nonFinite(builder, lineNo, rawStep, key, String(value));
      builder.set(key, value);
    } else if (typeof value === "string") {
      const match = NON_FINITE_STRING.exec(value);
      if (match !== null) {
        const x = match[2].toLowerCase() === "nan"
          ? Number.NaN
          : match[1] === "-"
          ? Number.NEGATIVE_INFINITY
          : Number.POSITIVE_INFINITY;
        nonFinite(
          builder,
          lineNo,
          rawStep,
          key,
          literalNonFinite ? `${value} literal` : JSON.stringify(value),
        );
        builder.set(key, x);
      } else if (key === "loss") {
        nonNumericLoss(builder, lineNo, rawStep, value);
      }
    } else if (key === "loss") {
      nonNumericLoss(builder, lineNo, rawStep, value);
    }
  }
}

function nonFinite(
  builder: SeriesBuilder,
  lineNo: number,
  step: number,
  metric: string,
  shown: string,
): void {
  builder.note(
    READER_CODES.nonFinite,
    "error",
    "NaN or infinite metric values",
    `line ${lineNo} step ${step}: ${metric}=${shown}`,
    step,
    metric,
  );
}

function nonNumericLoss(builder: SeriesBuilder, lineNo: number, step: number, value: unknown) {
  builder.note(
    READER_CODES.nonNumeric,
    "error",
    "loss is not a number",
    `line ${lineNo} step ${step}: loss=${JSON.stringify(value)}`,
    step,
    "loss",
  );
  // Present but unusable: the lanes see NaN at this step and fail it.
  builder.set("loss", Number.NaN);
}
