import assert from "node:assert/strict";
import { join } from "node:path";
import { checkResultsFolder } from "./results_folder.ts";

Deno.test("checkResultsFolder: a missing folder is created, a writable one is fine", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const results = join(dir, "a", "results");
    assert.equal(await checkResultsFolder(results, ["quickstart"]), null);
    assert.ok((await Deno.stat(results)).isDirectory);
    assert.deepEqual([...Deno.readDirSync(results)], [], "the write probe is removed");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("checkResultsFolder: a file, or a folder below a file, is one sentence", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = join(dir, "results");
    await Deno.writeTextFile(file, "not a folder");
    assert.match((await checkResultsFolder(file))!, /results folder .* is not a folder/);
    assert.match((await checkResultsFolder(join(file, "below")))!, /cannot be (used|created)/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("checkResultsFolder: paths longer than the filesystem allows are refused", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const problem = await checkResultsFolder(dir, ["x".repeat(2000)]);
    assert.match(problem!, /would exceed 4096 bytes/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
