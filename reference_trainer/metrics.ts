/**
 * The metrics sink: one JSON object per line, appended to the metrics file (parent folders
 * created) or written to stdout. Numbers are written by `JSON.stringify`, which prints the
 * shortest text that round-trips the float64 value exactly.
 *
 * @module
 */

import { dirname } from "node:path";

/** Receives metrics records. */
export interface MetricsSink {
  /** Appends one record as a JSON line. */
  write(record: Record<string, unknown>): void;
  /** Flushes and releases the file. */
  close(): void;
}

const encoder = new TextEncoder();

function writeAll(file: { writeSync(p: Uint8Array): number }, bytes: Uint8Array): void {
  let done = 0;
  while (done < bytes.length) done += file.writeSync(bytes.subarray(done));
}

/** Opens a sink appending to `path`, or passing lines to `stdout` when `path` is null. */
export function openMetrics(path: string | null, stdout: (line: string) => void): MetricsSink {
  if (path === null) return { write: (r) => stdout(JSON.stringify(r)), close: () => {} };
  Deno.mkdirSync(dirname(path), { recursive: true });
  const file = Deno.openSync(path, { append: true, create: true });
  return {
    write: (r) => writeAll(file, encoder.encode(JSON.stringify(r) + "\n")),
    close: () => file.close(),
  };
}
