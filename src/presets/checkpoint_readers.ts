/**
 * Checkpoint readers: for each checkpoint layout the harness can read back (`trainer.
 * checkpoint_format`), the program that digests a saved folder by the names of the trainer's
 * `saved` event, run in the trainer's own Python environment after the split and after the
 * converter (docs/deepspeed.md, "The files, read back").
 *
 * @module
 */

import { join } from "node:path";
import { PROJECT_DIR } from "./project_dir.ts";

/** The layouts `trainer.checkpoint_format` accepts. */
export const CHECKPOINT_FORMATS = ["deepspeed"] as const;

/** One of {@link CHECKPOINT_FORMATS}. */
export type CheckpointFormat = typeof CHECKPOINT_FORMATS[number];

/** The reader of each format: a Python script run as `<python> <script> <folder>`. */
const READERS: Readonly<Record<CheckpointFormat, string>> = {
  deepspeed: join(PROJECT_DIR, "adapters/deepspeed/checkpoint_files.py"),
};

/** The argv that reads `folder` back with `python` (never passed through a shell). */
export function checkpointReaderArgv(
  format: CheckpointFormat,
  python: string,
  folder: string,
): string[] {
  return [python, READERS[format], folder];
}

/** The modules each reader imports beside itself (its shard readers), for cache keys. */
const READER_MODULES: Readonly<Record<CheckpointFormat, readonly string[]>> = {
  deepspeed: ["zero_shards.py", "process_maps.py"],
};

/** The code a reader runs (the script and the modules it imports beside it), for cache keys. */
export function checkpointReaderInputs(format: CheckpointFormat): string[] {
  const dir = join(READERS[format], "..");
  return [READERS[format], ...READER_MODULES[format].map((name) => join(dir, name))];
}
