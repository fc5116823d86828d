import assert from "node:assert/strict";
import { join } from "node:path";
import { checkpointChanged, hashCheckpoints } from "./checkpoint_hashes.ts";

/** A phase folder with a two-file checkpoint; returns it and the recorded hashes. */
async function savedCheckpoint() {
  const dir = await Deno.makeTempDir();
  const root = join(dir, "checkpoints");
  await Deno.mkdir(join(root, "global_step2"), { recursive: true });
  await Deno.writeTextFile(join(root, "latest"), "global_step2");
  const shard = join(root, "global_step2", "optim_states.bin");
  await Deno.writeFile(shard, new Uint8Array(5000).map((_, i) => i % 251));
  return { dir, root, shard, recorded: await hashCheckpoints(dir, [root, join(dir, "absent")]) };
}

/** Flips one bit of `path` in place and puts its mtime back, as silent bit rot would. */
async function flipBit(path: string, offset: number) {
  const info = await Deno.stat(path);
  const bytes = await Deno.readFile(path);
  bytes[offset] ^= 0x10;
  await Deno.writeFile(path, bytes);
  await Deno.utime(path, info.atime!, info.mtime!);
}

Deno.test("hashCheckpoints() records every file under the existing roots", async () => {
  const { dir, recorded } = await savedCheckpoint();
  try {
    assert.equal(recorded.algorithm, "xxh128");
    assert.deepEqual(recorded.roots, ["checkpoints"]);
    assert.deepEqual(Object.keys(recorded.files), [
      "checkpoints/global_step2/optim_states.bin",
      "checkpoints/latest",
    ]);
    assert.equal(recorded.bytes, 5000 + "global_step2".length);
    assert.match(recorded.files["checkpoints/latest"].hash, /^[0-9a-f]{32}$/);
    assert.equal(await checkpointChanged(dir, recorded), null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("checkpointChanged() names a flipped, truncated, missing or added file", async () => {
  const { dir, root, shard, recorded } = await savedCheckpoint();
  try {
    await flipBit(shard, 4321);
    assert.equal(
      await checkpointChanged(dir, recorded),
      "checkpoint file checkpoints/global_step2/optim_states.bin changed since the phase " +
        "completed (xxh128 differs)",
    );
    await Deno.truncate(shard, 10);
    assert.match(await checkpointChanged(dir, recorded) ?? "", /has 10 bytes, 5000 when it/);
    await Deno.remove(shard);
    assert.match(await checkpointChanged(dir, recorded) ?? "", /optim_states\.bin is missing/);
    await Deno.writeTextFile(shard, "x");
    await Deno.writeTextFile(join(root, "global_step2", "stray.pt"), "x");
    assert.equal(
      await checkpointChanged(dir, recorded),
      "checkpoint file checkpoints/global_step2/stray.pt appeared after the phase completed",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("checkpointChanged() above the limit checks size, mtime and inode unless told to hash", async () => {
  const { dir, shard, recorded } = await savedCheckpoint();
  try {
    await flipBit(shard, 17);
    // Silent bit rot keeps size, mtime and inode: only the full hash sees it.
    assert.equal(await checkpointChanged(dir, recorded, "auto", 100), null);
    assert.match(await checkpointChanged(dir, recorded, "full", 100) ?? "", /xxh128 differs/);
    const later = new Date(Date.now() + 5000);
    await Deno.utime(shard, later, later);
    assert.match(
      await checkpointChanged(dir, recorded, "auto", 100) ?? "",
      /optim_states\.bin was modified after the phase completed \(mtime differs\)/,
    );
    const copy = `${shard}.copy`;
    await Deno.copyFile(shard, copy);
    await Deno.rename(copy, shard);
    await Deno.utime(
      shard,
      new Date(recorded.files["checkpoints/global_step2/optim_states.bin"].mtime_ms!),
      new Date(recorded.files["checkpoints/global_step2/optim_states.bin"].mtime_ms!),
    );
    assert.match(await checkpointChanged(dir, recorded, "auto", 100) ?? "", /was replaced/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("checkpointChanged() refuses hashes naming files outside the phase folder", async () => {
  const { dir, recorded } = await savedCheckpoint();
  try {
    const file = recorded.files["checkpoints/latest"];
    const tampered = { ...recorded, files: { ...recorded.files, "../../etc/hostname": file } };
    assert.equal(
      await checkpointChanged(dir, tampered),
      "its phase.json hashes a checkpoint file outside its folder: ../../etc/hostname",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
