/**
 * Bad experiment files end in exit code 2 with a path-precise message and launch nothing: not
 * even a valid experiment named in the same invocation runs.
 */

import assert from "node:assert/strict";
import { basename, join } from "node:path";
import { pathExists } from "../src/pipeline/store/run_store.ts";
import { main } from "../src/cli/main.ts";
import { captureConsole } from "./_testing/capture_console.ts";
import { PROJECT, runCli, writeExperiment } from "./_testing/cli_harness.ts";

const BAD_DIR = join(PROJECT, "test/fixtures/bad_experiments");

async function badFiles(): Promise<string[]> {
  const files: string[] = [];
  for await (const e of Deno.readDir(BAD_DIR)) {
    if (e.isFile && /\.(ya?ml|json)$/.test(e.name)) files.push(join(BAD_DIR, e.name));
  }
  return files.sort();
}

Deno.test("run: at least 20 malformed experiment files exist to prove validation", async () => {
  assert.ok((await badFiles()).length >= 20);
});

Deno.test("run: every malformed file exits 2 and no process is launched", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const marker = join(dir, "launched");
    // A valid experiment whose trainer would leave a marker file if anything were launched.
    const good = await writeExperiment(dir, "good.yaml", {
      name: "good",
      schedule: { steps: 4, save_at: 2 },
      trainer: { command: ["touch", marker] },
      resume: { native: { from: "native" } },
    });
    const bad = await badFiles();
    const results = join(dir, "results");
    const run = await runCli(["run", good, ...bad, "--results", results]);
    assert.equal(run.code, 2, run.stderr);
    for (const file of bad) {
      assert.ok(run.stderr.includes(basename(file)), `an error names ${basename(file)}`);
    }
    assert.equal(await pathExists(marker), false, "the valid experiment's trainer never ran");
    assert.equal(await pathExists(results), false, "no results folder was created");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("run: each malformed file alone exits 2 with a message naming a path", async () => {
  const dir = await Deno.makeTempDir();
  try {
    for (const file of await badFiles()) {
      const run = await captureConsole(() =>
        main(["run", file, "--results", join(dir, "results")])
      );
      assert.equal(run.value, 2, `${basename(file)} exits 2`);
      assert.ok(
        run.err.startsWith(file),
        `${basename(file)}: message starts with the file name: ${run.err}`,
      );
    }
    assert.equal(await pathExists(join(dir, "results")), false);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
