/**
 * The project folder (where `deno.json` and `src/` live), for presets that launch programs
 * shipped with the harness and for cache keys that abstract it away.
 *
 * @module
 */

import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** Absolute path of the project folder. */
export const PROJECT_DIR: string = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
