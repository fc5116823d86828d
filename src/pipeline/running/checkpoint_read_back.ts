/**
 * The checkpoint read-back: after a split or convert phase whose spec names a reader
 * (`readBack`, from `trainer.checkpoint_format`), the reader runs as a process of its own in
 * the trainer's Python environment, with no engine, on the folder the phase wrote, and its
 * document goes into the phase folder (`checkpoint_files.json`) for the judge: the digests of
 * what the files hold, by the names of the trainer's `saved` event. A reader that cannot read
 * the folder leaves `unreadable` and its reason, never digests.
 *
 * @module
 */

import type { PhaseSpec } from "../../types/mod.ts";
import { writeJsonAtomic } from "../store/mod.ts";

/** What `checkpoint_files.json` holds. */
export interface CheckpointFilesRecord {
  /** The folder read. */
  folder: string;
  /** Seconds the reader ran. */
  wall_s: number;
  /** The reader's document (`digests`, `tensors`, `absent`, `not_read`, `layout`) when it read the folder. */
  document?: Record<string, unknown>;
  /** Why it could not (its last line of stderr, or how it ended). */
  unreadable?: string;
}

/** Runs `spec.readBack` (when set) and writes its record; returns it. */
export async function readCheckpointBack(
  spec: PhaseSpec,
): Promise<CheckpointFilesRecord | undefined> {
  const readBack = spec.readBack;
  if (readBack === undefined) return undefined;
  const [program, ...args] = readBack.argv;
  const folder = args[args.length - 1];
  const started = performance.now();
  let record: CheckpointFilesRecord;
  try {
    const done = await new Deno.Command(program, {
      args,
      cwd: spec.cwd,
      env: spec.env,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(spec.timeoutS * 1000),
    }).output();
    const wall_s = Math.round(performance.now() - started) / 1000;
    const stdout = new TextDecoder().decode(done.stdout).trim().split("\n");
    const stderr = new TextDecoder().decode(done.stderr).trim().split("\n");
    // The document is the last line: unpickling may import DeepSpeed, which logs.
    const document = done.code === 0 ? _object(stdout[stdout.length - 1]) : undefined;
    record = document ? { folder, wall_s, document } : {
      folder,
      wall_s,
      unreadable: done.code === 0
        ? "the reader printed no JSON document"
        : stderr[stderr.length - 1] || `the reader exited ${done.code}`,
    };
  } catch (error) {
    const wall_s = Math.round(performance.now() - started) / 1000;
    record = { folder, wall_s, unreadable: `the reader did not run: ${(error as Error).message}` };
  }
  await writeJsonAtomic(readBack.out, record);
  return record;
}

function _object(line: string | undefined): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(line ?? "");
    return value !== null && typeof value === "object" && !Array.isArray(value) ? value : undefined;
  } catch {
    return undefined;
  }
}
