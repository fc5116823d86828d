/**
 * The harness's layers, lowest first. A module may import only from its own folder and from the
 * folders its layer lists; the trainer (`src/reference`) sits on the far side of the process
 * contract, and no harness layer imports it. A folder with a `mod.ts` is entered only through it
 * from other folders (its facade is its surface); a folder without one is imported file by file.
 * Test files and test helpers are exempt.
 */

import assert from "node:assert/strict";
import { dirname, join, relative, resolve } from "node:path";
import { pathExists } from "../src/pipeline/run_store.ts";
import { harnessModules, SRC } from "./_testing/source_tree.ts";

/** What the pipeline may import: every layer below it. */
const BELOW_PIPELINE = [
  "types",
  "format",
  "affine",
  "process",
  "executors",
  "metrics",
  "presets",
  "parity",
  "charts",
  "report",
  "experiment",
];

/** Folder → the folders it may import from. */
const MAY_IMPORT: Record<string, readonly string[]> = {
  types: [],
  format: ["types"],
  affine: [],
  process: ["format"], // the one duration format of the console
  executors: ["types", "process"],
  metrics: ["types"],
  presets: ["types", "affine"],
  parity: ["types", "format", "metrics"],
  charts: ["types", "format", "parity"],
  report: ["types", "format", "process", "parity", "charts"], // process: the redacting writer
  experiment: ["types", "presets"],
  pipeline: BELOW_PIPELINE,
  reproduce: ["types", "format", "process", "metrics", "parity", "experiment", "pipeline"],
  cli: [...BELOW_PIPELINE, "pipeline", "reproduce"],
  reference: ["affine"],
};

Deno.test("no module imports from a higher layer or from the trainer", async () => {
  const problems: string[] = [];
  for await (const { file, rel, folder, text } of harnessModules()) {
    const allowed = folder === null ? Object.keys(MAY_IMPORT) : MAY_IMPORT[folder];
    assert.ok(allowed, `src/${folder}/ has no layer in this test: add it to MAY_IMPORT`);
    for (const [, spec] of text.matchAll(/from\s+"(\.[^"]+)"/g)) {
      const target = relative(SRC, resolve(dirname(file), spec));
      const to = target.split("/")[0];
      if (to === folder || !target.includes("/")) continue;
      const trainer = to === "reference" && folder !== "reference";
      if (trainer || !allowed.includes(to)) problems.push(`src/${rel} imports src/${target}`);
    }
  }
  assert.deepEqual(problems, []);
});

Deno.test("a folder with a mod.ts is imported through it from every other folder", async () => {
  const facades = new Set<string>();
  for await (const entry of Deno.readDir(SRC)) {
    if (entry.isDirectory && await pathExists(join(SRC, entry.name, "mod.ts"))) {
      facades.add(entry.name);
    }
  }
  const bypasses: string[] = [];
  for await (const { file, rel, folder, text } of harnessModules()) {
    for (const [, spec] of text.matchAll(/from\s+"(\.[^"]+)"/g)) {
      const target = relative(SRC, resolve(dirname(file), spec));
      const [to, ...rest] = target.split("/");
      if (to === folder || !facades.has(to) || rest.join("/") === "mod.ts") continue;
      bypasses.push(`src/${rel} imports src/${target}, not src/${to}/mod.ts`);
    }
  }
  assert.ok(facades.size > 0, "no folder has a mod.ts: is SRC right?");
  assert.deepEqual(bypasses, []);
});
