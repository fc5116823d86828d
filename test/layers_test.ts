/**
 * The harness's layers, lowest first. A module may import only from its own folder and from the
 * folders its layer lists; the trainer (`reference_trainer`) sits on the far side of the process * contract, outside `src/`, and no harness layer imports it (it imports only `src/affine/mod.ts`).
 * A folder that holds only sub-folders (`pipeline/`) is layered per sub-folder. A folder with a `mod.ts` is entered only through it
 * from other folders (its facade is its surface); a folder without one is imported file by file.
 * Test files and test helpers are exempt.
 */

import assert from "node:assert/strict";
import { dirname, join, relative, resolve } from "node:path";
import { pathExists } from "../src/pipeline/store/run_store.ts";
import { folderOf, harnessModules, SRC, TRAINER } from "./_testing/source_tree.ts";

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

/** The pipeline's job folders, lowest first: the results store, offline bundles, running. */
const PIPELINE = ["pipeline/store", "pipeline/offline", "pipeline/running"];

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
  "pipeline/store": BELOW_PIPELINE,
  "pipeline/offline": [...BELOW_PIPELINE, "pipeline/store"],
  "pipeline/running": [...BELOW_PIPELINE, "pipeline/store", "pipeline/offline"],
  reproduce: ["types", "format", "process", "metrics", "parity", "experiment", ...PIPELINE],
  cli: [...BELOW_PIPELINE, ...PIPELINE, "reproduce"],
};

Deno.test("no module imports from a higher layer or from the trainer", async () => {
  const problems: string[] = [];
  for await (const { file, rel, folder, text } of harnessModules()) {
    const allowed = folder === null ? Object.keys(MAY_IMPORT) : MAY_IMPORT[folder];
    assert.ok(allowed, `src/${folder}/ has no layer in this test: add it to MAY_IMPORT`);
    for (const [, spec] of text.matchAll(/from\s+"(\.[^"]+)"/g)) {
      const target = relative(SRC, resolve(dirname(file), spec));
      const to = folderOf(target) ?? "";
      if (to === folder || !target.includes("/")) continue;
      const trainer = target.startsWith("../"); // the trainer, or anything outside src/
      if (trainer || !allowed.includes(to)) problems.push(`src/${rel} imports src/${target}`);
    }
  }
  assert.deepEqual(problems, []);
});

Deno.test("a folder with a mod.ts is imported through it from every other folder", async () => {
  const facades = new Set<string>();
  for await (const entry of Deno.readDir(SRC)) {
    if (!entry.isDirectory) continue;
    if (await pathExists(join(SRC, entry.name, "mod.ts"))) facades.add(entry.name);
    for await (const sub of Deno.readDir(join(SRC, entry.name))) {
      const folder = `${entry.name}/${sub.name}`;
      if (sub.isDirectory && await pathExists(join(SRC, folder, "mod.ts"))) {
        facades.add(folder);
      }
    }
  }
  const bypasses: string[] = [];
  for await (const { file, rel, folder, text } of harnessModules()) {
    for (const [, spec] of text.matchAll(/from\s+"(\.[^"]+)"/g)) {
      const target = relative(SRC, resolve(dirname(file), spec));
      const to = folderOf(target) ?? "";
      if (to === folder || !facades.has(to) || target === `${to}/mod.ts`) continue;
      bypasses.push(`src/${rel} imports src/${target}, not src/${to}/mod.ts`);
    }
  }
  assert.ok(facades.size > 0, "no folder has a mod.ts: is SRC right?");
  assert.deepEqual(bypasses, []);
});

/** The trainer's folders, lowest first, and what each may import ("": its programs at the top). */
const TRAINER_MAY_IMPORT: Record<string, readonly string[]> = {
  model: [],
  checkpoints: ["model"],
  "": ["model", "checkpoints"],
};

Deno.test("the trainer imports from the harness only src/affine/mod.ts, and its own folders in layers", async () => {
  const problems: string[] = [];
  let modules = 0;
  const folderIn = (path: string) => {
    const parts = relative(TRAINER, path).split("/");
    return parts.length > 1 ? parts[0] : "";
  };
  for await (const { file, rel, text } of harnessModules(TRAINER)) {
    modules++;
    const from = folderIn(file);
    const allowed = TRAINER_MAY_IMPORT[from];
    assert.ok(allowed, `${rel}: the trainer's folder ${from} has no layer in this test`);
    for (const [, spec] of text.matchAll(/from\s+"(\.[^"]+)"/g)) {
      const target = resolve(dirname(file), spec);
      if (relative(TRAINER, target).startsWith("..")) {
        if (relative(SRC, target) !== "affine/mod.ts") problems.push(`${rel} imports ${target}`);
        continue;
      }
      const to = folderIn(target);
      if (to === from) continue;
      if (!allowed.includes(to)) problems.push(`${rel} imports ${target} (a higher layer)`);
      else if (target !== join(TRAINER, to, "mod.ts")) {
        problems.push(`${rel} imports ${target}, not ${to}/mod.ts`);
      }
    }
  }
  assert.ok(modules > 0, "no trainer module found: is TRAINER right?");
  assert.deepEqual(problems, []);
});
