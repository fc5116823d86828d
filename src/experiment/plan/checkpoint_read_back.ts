/**
 * Which phases' checkpoints the harness reads back, in which format and with which Python: the
 * split's tag folder and the converter's universal folder, when the trainer's
 * `checkpoint_format` (or its preset's) names a layout (docs/deepspeed.md, "The files, read
 * back"). Pure.
 *
 * @module
 */

import { posix } from "node:path";
import type { CheckpointFormat } from "../../presets/mod.ts";
import { trainerPreset } from "./phase_graph.ts";
import type { Experiment } from "../schema.ts";

/**
 * The Python beside a command trainer's program (`.venv/bin/torchrun` → `.venv/bin/python`), as a
 * template of the same folder, or the program itself when it is `${python}` (`args.venv`'s
 * Python); undefined when the program is a bare name found on `PATH`.
 */
export function readerPythonOf(command: readonly string[]): string | undefined {
  const program = command[0];
  if (program.trim() === "${python}") return program;
  if (!program.includes("/")) return undefined;
  return posix.join(posix.dirname(program), "python");
}

/** The trainer's checkpoint format: its own `checkpoint_format`, else its preset's. */
export function checkpointFormatOf(exp: Experiment): CheckpointFormat | undefined {
  return exp.trainer.checkpoint_format ?? trainerPreset(exp)?.checkpointFormat;
}
