/**
 * Follow a JSONL metrics file while a child appends to it, reporting the highest `step` seen, so
 * progress comes from the metrics stream rather than from parsing logs.
 *
 * @module
 */

import { LineSplitter } from "./_line_splitter.ts";

/** Options of {@linkcode followMetricsSteps}. */
export interface FollowOptions {
  /** Poll interval in milliseconds (default 200). */
  intervalMs?: number;
}

/** A running follower, returned by {@linkcode followMetricsSteps}. */
export interface MetricsFollower {
  /** Highest step seen so far, or `null`. */
  readonly maxStep: number | null;
  /** Stop polling after one last read of the file; resolves with the highest step seen. */
  stop(): Promise<number | null>;
}

/**
 * Poll `path` every ~200 ms, parse each complete line as JSON and call `onStep` whenever a larger
 * finite `step` appears (step and event records alike). A missing file, a partial last line,
 * blank lines and malformed JSON are all tolerated: only complete, valid lines count. If the file
 * shrinks (rewritten from scratch) it is read again from the start.
 *
 * @example
 * ```ts
 * const follower = followMetricsSteps(`${phaseDir}/metrics.jsonl`, (step) => phase.step(step));
 * const result = await runChild(spec);
 * await follower.stop();
 * ```
 */
export function followMetricsSteps(
  path: string,
  onStep: (step: number) => void,
  options: FollowOptions = {},
): MetricsFollower {
  const intervalMs = options.intervalMs ?? 200;
  let offset = 0;
  let decoder = new TextDecoder();
  let splitter = new LineSplitter();
  let maxStep: number | null = null;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let inFlight: Promise<void> = Promise.resolve();

  const consume = (line: string) => {
    const step = stepOf(line);
    if (step === null || (maxStep !== null && step <= maxStep)) return;
    maxStep = step;
    try {
      onStep(step);
    } catch {
      // A faulty progress display must not stop the follower.
    }
  };

  const poll = async () => {
    let size: number;
    try {
      size = (await Deno.stat(path)).size;
    } catch {
      return; // not created yet
    }
    if (size < offset) {
      offset = 0;
      decoder = new TextDecoder();
      splitter = new LineSplitter();
    }
    if (size === offset) return;
    let file: Deno.FsFile;
    try {
      file = await Deno.open(path, { read: true });
    } catch {
      return;
    }
    try {
      await file.seek(offset, Deno.SeekMode.Start);
      const buffer = new Uint8Array(64 * 1024);
      while (true) {
        const n = await file.read(buffer);
        if (n === null || n === 0) break;
        offset += n;
        for (const line of splitter.push(decoder.decode(buffer.subarray(0, n), { stream: true }))) {
          consume(line);
        }
      }
    } catch {
      // Transient read errors: retry at the next poll.
    } finally {
      file.close();
    }
  };

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      inFlight = poll().finally(schedule);
    }, intervalMs);
  };
  inFlight = poll().finally(schedule);

  return {
    get maxStep() {
      return maxStep;
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await inFlight;
      await poll();
      // The writer has finished: a last line without newline is complete now.
      const last = splitter.flush();
      if (last !== null) consume(last);
      return maxStep;
    },
  };
}

function stepOf(line: string): number | null {
  if (line.trim() === "") return null;
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch {
    return null;
  }
  if (typeof record !== "object" || record === null) return null;
  const step = (record as { step?: unknown }).step;
  return typeof step === "number" && Number.isFinite(step) ? step : null;
}
