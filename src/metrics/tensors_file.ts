/**
 * Per-tensor digest sidecars (README, "The trainer contract"). An event whose per-tensor map is
 * too large to sit on one metrics line names a JSON file instead, relative to the metrics file's
 * folder: `{"event": "saved", "step": 50, "digests": {...}, "tensors_file": "tensors-saved-50.json"}`.
 * {@link resolveTensorFiles} reads each sidecar once, when the metrics are read, into the event's
 * `tensors`, so the state checks see one shape whichever way a trainer wrote it. A path that
 * leaves that folder (absolute, or with a `..` segment), a sidecar that cannot be read, or one
 * that is not an object of string digests leaves the event without `tensors`, records why in
 * {@link TENSORS_ERROR_FIELD} (the state check of that event is then ERROR, saying so) and adds a
 * `metrics-tensors-file` warning. It never throws.
 *
 * @module
 */

import { isAbsolute, join } from "node:path";
import type { Diagnostic } from "../types/mod.ts";
import { type EventRecord, type MetricSeries, READER_CODES } from "./series.ts";

/** The event field that says why a `tensors_file` could not be resolved. */
export const TENSORS_ERROR_FIELD = "tensors_error";

/** Largest sidecar read (64 MiB: about half a million tensor entries). */
const MAX_TENSORS_FILE_BYTES = 64 << 20;

/**
 * Resolves the `tensors_file` of every event in `series` against `folder` (the metrics file's
 * folder), in place, and returns `series`.
 */
export async function resolveTensorFiles(
  series: MetricSeries,
  folder: string,
): Promise<MetricSeries> {
  for (const event of series.events) {
    const file = event.fields.tensors_file;
    if (file === undefined || event.fields.tensors !== undefined) continue;
    const read = await readSidecar(folder, file);
    if (typeof read === "string") {
      event.fields[TENSORS_ERROR_FIELD] = read;
      series.diagnostics.push(sidecarDiagnostic(event, read));
    } else {
      event.fields.tensors = read;
    }
  }
  return series;
}

/** The sidecar's map, or why it cannot be used. */
async function readSidecar(
  folder: string,
  file: unknown,
): Promise<Record<string, string> | string> {
  const unsafe = unsafePath(file);
  if (unsafe !== null) return unsafe;
  const path = join(folder, file as string);
  let text: string;
  try {
    const info = await Deno.stat(path);
    if (!info.isFile) return `tensors_file ${path} is not a file`;
    if (info.size > MAX_TENSORS_FILE_BYTES) {
      return `tensors_file ${path} is ${info.size} bytes, more than ${MAX_TENSORS_FILE_BYTES}`;
    }
    text = await Deno.readTextFile(path);
  } catch (error) {
    const why = error instanceof Deno.errors.NotFound
      ? "does not exist"
      : `cannot be read (${error instanceof Error ? error.message : String(error)})`;
    return `tensors_file ${path} ${why}`;
  }
  return parseSidecar(path, text);
}

/** Why `file` is not a relative path inside the metrics folder, or null when it is. */
function unsafePath(file: unknown): string | null {
  if (typeof file !== "string" || file.trim() === "") {
    return `tensors_file must be a non-empty relative path, got ${JSON.stringify(file)}`;
  }
  if (isAbsolute(file) || /^[A-Za-z]:/.test(file) || file.startsWith("\\")) {
    return `tensors_file ${JSON.stringify(file)} is absolute: it must name a file inside the ` +
      "metrics file's folder";
  }
  if (file.split(/[\\/]/).includes("..") || file.includes("\0")) {
    return `tensors_file ${JSON.stringify(file)} leaves the metrics file's folder`;
  }
  return null;
}

/** The sidecar's `{name: digest}` map, or why it is malformed. */
function parseSidecar(path: string, text: string): Record<string, string> | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return `tensors_file ${path} is not JSON (${error instanceof Error ? error.message : error})`;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return `tensors_file ${path} is not a JSON object of tensor digests`;
  }
  const bad = Object.entries(value).find(([, digest]) => typeof digest !== "string");
  if (bad !== undefined) {
    return `tensors_file ${path}: the digest of ${JSON.stringify(bad[0])} is not a string`;
  }
  if (Object.keys(value).length === 0) return `tensors_file ${path} holds no tensor digests`;
  return value as Record<string, string>;
}

function sidecarDiagnostic(event: EventRecord, why: string): Diagnostic {
  return {
    level: "warning",
    code: READER_CODES.tensorsFile,
    message: `the per-tensor digests of the ${event.event} event (line ${event.line}) cannot ` +
      `be read, so its state check cannot name tensors: ${why}`,
    ...(event.step !== null ? { step: event.step } : {}),
  };
}
