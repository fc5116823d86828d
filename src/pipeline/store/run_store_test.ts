import assert from "node:assert/strict";
import { join } from "node:path";
import {
  assertInside,
  experimentFolderName,
  latestRunDir,
  listRuns,
  newRunId,
  updateLatest,
} from "./run_store.ts";

Deno.test("newRunId() sorts by start time, even within one second", () => {
  const base = Date.UTC(2026, 10, 29, 10, 15, 0, 7);
  const ids = [0, 1, 250, 999, 1000].map((ms) => newRunId(new Date(base + ms), "x"));
  assert.match(ids[0], /^20261129T101500Z-007[0-9a-f]{3}$/);
  assert.deepEqual([...ids].sort(), ids);
  assert.notEqual(newRunId(new Date(base), "x"), newRunId(new Date(base), "x"), "the hash differs");
});

Deno.test("assertInside() refuses paths that leave the results folder", () => {
  assertInside("/r", "/r/exp/run");
  assertInside("/r", "/r/..exp"); // a name starting with two dots is still inside
  assert.throws(() => assertInside("/r", "/r/../etc"), /outside the results folder/);
  assert.throws(() => assertInside("/r", "/elsewhere"), /outside the results folder/);
  assert.throws(() => assertInside("/r", "/r"), /outside the results folder/);
});

Deno.test("updateLatest() and listRuns() keep `latest` pointing at the newest run", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const older = newRunId(new Date(Date.UTC(2026, 0, 1)), "a");
    const newer = newRunId(new Date(Date.UTC(2026, 0, 2)), "b");
    for (const id of [newer, older]) await Deno.mkdir(join(dir, id));
    await Deno.mkdir(join(dir, "not-a-run"));
    await updateLatest(dir, older);
    await updateLatest(dir, newer);
    assert.equal(await latestRunDir(dir), join(dir, newer));
    assert.deepEqual(await listRuns(dir), [join(dir, older), join(dir, newer)]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("experimentFolderName() keeps glob syntax out of folder names", () => {
  assert.equal(experimentFolderName("ds[zero_stage=1]"), "ds@zero_stage=1");
  assert.equal(experimentFolderName("m[path=a/b,x=*?(+)]"), "m@path=a_b,x=_____");
  assert.equal(experimentFolderName("quickstart-v1.2"), "quickstart-v1.2");
});
