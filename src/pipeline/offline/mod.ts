/**
 * Offline bundles: an experiment's phases written for `tools/offline_phases.py` (`parity plan
 * --bundle`) and read back as an earlier run (`parity run --import`).
 *
 * @module
 */

export { writeBundle } from "./offline_bundle.ts";
export { importBundle, type ImportResult } from "./offline_import.ts";
