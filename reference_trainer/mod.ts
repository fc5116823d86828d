/**
 * The reference trainer, a separate program on the far side of the process contract (`deno run -A
 * reference_trainer/cli.ts <command>`, docs/reference-trainer.md). The harness launches it by path
 * and never imports it; this facade is what tests and benchmarks use. From the harness it imports
 * only `src/affine/mod.ts`.
 *
 * @module
 */

export { NATIVE_MARKER } from "./checkpoints/mod.ts";
export { main } from "./cli.ts";
export { FAULT_NAMES } from "./faults.ts";
