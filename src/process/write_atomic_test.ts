import assert from "node:assert/strict";
import { join } from "node:path";
import { writeTextAtomic } from "./write_atomic.ts";

Deno.test("writeTextAtomic() leaves no temporary file behind when the write fails", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // The target is a non-empty folder: the temporary file is written, the rename fails.
    await Deno.mkdir(join(dir, "summary.json", "inside"), { recursive: true });
    await assert.rejects(() => writeTextAtomic(join(dir, "summary.json"), "{}\n"));
    const left = [...Deno.readDirSync(dir)].map((e) => e.name);
    assert.deepEqual(left, ["summary.json"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("writeTextAtomic() redacts token shapes on the way to disk", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const token = `ghp_${"a".repeat(36)}`;
    await writeTextAtomic(join(dir, "sub", "report.md"), `clone with ${token}\n`);
    assert.equal(await Deno.readTextFile(join(dir, "sub", "report.md")), "clone with <redacted>\n");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
