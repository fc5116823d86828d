import assert from "node:assert/strict";
import { join } from "node:path";
import { listRuns } from "./run_store.ts";
import { removeStrayTemporaries } from "./stray_temporaries.ts";

async function deadPid(): Promise<number> {
  const child = new Deno.Command("true").spawn();
  await child.status;
  return child.pid;
}

Deno.test("removeStrayTemporaries() removes a dead writer's *.tmp files, keeps live ones and old runs", async () => {
  const dir = await Deno.makeTempDir();
  const sleeper = new Deno.Command("sleep", { args: ["30"] }).spawn();
  try {
    const dead = await deadPid();
    const old = join(dir, "20261201T100000Z-000aaa");
    const latest = join(dir, "20261201T110000Z-000bbb");
    const killed = join(dir, "20261201T120000Z-000ccc");
    const current = join(dir, "20261201T130000Z-000ddd");
    for (const run of [old, latest, killed, current]) {
      await Deno.mkdir(join(run, "phases", "split"), { recursive: true });
    }
    await Deno.symlink("20261201T110000Z-000bbb", join(dir, "latest"));
    const files = {
      oldRun: join(old, `summary.json.${dead}.1.tmp`), // finished long ago: not looked at
      phase: join(killed, "phases", "split", `phase.json.${dead}.3.tmp`),
      report: join(latest, `report.html.${dead}.a1b2c3d4.tmp`),
      live: join(killed, `manifest.json.${sleeper.pid}.2.tmp`),
      trainer: join(killed, "phases", "split", "ckpt.tmp"), // not the harness's naming
      lock: join(dir, `.lock.${dead}.9f8e7d6c.tmp`),
      current: join(current, `summary.json.${dead}.4.tmp`),
    };
    for (const path of Object.values(files)) await Deno.writeTextFile(path, "half");
    const earlier = (await listRuns(dir)).filter((run) => run !== current);
    const notes = await removeStrayTemporaries(dir, earlier);
    const left = async (path: string) => await Deno.stat(path).then(() => true, () => false);
    assert.equal(await left(files.phase), false);
    assert.equal(await left(files.report), false);
    assert.equal(await left(files.lock), false);
    assert.equal(await left(files.oldRun), true);
    assert.equal(await left(files.live), true, "its writer is alive");
    assert.equal(await left(files.trainer), true);
    assert.equal(await left(files.current), true, "the current run's own folder is not touched");
    assert.equal(notes.length, 3);
    assert.match(notes.join("\n"), /removed a temporary file a killed run left: \.lock\./);
  } finally {
    sleeper.kill();
    await sleeper.status;
    await Deno.remove(dir, { recursive: true });
  }
});
