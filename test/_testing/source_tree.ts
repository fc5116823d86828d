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

/** The reference trainer: a separate program outside `src/` (docs/reference-trainer.md). */
export const TRAINER: string = join(PROJECT, "reference_trainer");

/** Top folders of `src/` that hold only sub-folders (`pipeline/`): each sub-folder is a layer. */
const GROUPS: ReadonlySet<string> = new Set(
  [...Deno.readDirSync(SRC)].filter((entry) =>
    entry.isDirectory &&
    ![...Deno.readDirSync(join(SRC, entry.name))].some((e) => e.isFile && e.name.endsWith(".ts"))
  ).map((entry) => entry.name),
);

/**
 * The folder (layer) of a path relative to `src/`: its top folder, or `top/sub` inside a folder
 * that holds only sub-folders (`pipeline/running`); null for a file directly in `src/`.
 */
export function folderOf(rel: string): string | null {
  const parts = rel.split("/");
  if (parts.length < 2) return null;
  return parts.length > 2 && GROUPS.has(parts[0]) ? `${parts[0]}/${parts[1]}` : parts[0];
}

/** One module of `src/`. */
export interface HarnessModule {
  /** Absolute path. */
  file: string;
  /** Path relative to `src/`. */
  rel: string;
  /** Its folder under `src/` ({@link folderOf}; `null` for a file directly in `src/`). */
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
    const folder = folderOf(rel);
    yield { file, rel, folder, text: await Deno.readTextFile(file) };
  }
}
