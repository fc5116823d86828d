/**
 * The harness's own modules as the structure tests read them (layers, facades, import circles):
 * every non-test `.ts` file under `src/`, with its folder and text.
 *
 * @module
 */

import { join, relative } from "node:path";
import { isTestCode } from "../../tools/code_figures.ts";
import { PROJECT } from "./cli_harness.ts";

/** The `src/` folder of this checkout. */
export const SRC: string = join(PROJECT, "src");

/** One module of `src/`. */
export interface HarnessModule {
  /** Absolute path. */
  file: string;
  /** Path relative to `src/`. */
  rel: string;
  /** Its top folder under `src/` (`null` for a file directly in `src/`). */
  folder: string | null;
  /** Its source text. */
  text: string;
}

/** Test code (tests, test helpers, test data), which the structure rules exempt: the one rule the
 * code figures of CONTRIBUTING.md also count by. */
export { isTestCode } from "../../tools/code_figures.ts";

/** Every non-test module of `src/`. */
export async function* harnessModules(dir: string = SRC): AsyncGenerator<HarnessModule> {
  for await (const entry of Deno.readDir(dir)) {
    const file = join(dir, entry.name);
    if (entry.isDirectory) {
      yield* harnessModules(file);
      continue;
    }
    const rel = relative(SRC, file);
    if (!entry.name.endsWith(".ts") || isTestCode(rel)) continue;
    const folder = rel.includes("/") ? rel.split("/")[0] : null;
    yield { file, rel, folder, text: await Deno.readTextFile(file) };
  }
}
