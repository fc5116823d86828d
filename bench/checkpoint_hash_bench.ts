/**
 * Checkpoint hashing at phase completion (docs/reliability.md): XXH3-128 streamed over a
 * checkpoint-shaped folder, one large file and eight shards hashed four at a time, against
 * SHA-256 (WebCrypto, whole file in memory) on the same bytes; and the hashes alone in memory. Throughput = 256 MiB / time per
 * iteration. Run: `deno bench -A bench/checkpoint_hash_bench.ts`.
 *
 * @module
 */

import { join } from "node:path";
import { createBLAKE3, createXXHash128 } from "hash-wasm";
import { checkpointChanged, hashCheckpoints } from "../src/pipeline/store/checkpoint_hashes.ts";

const MIB = 1 << 20;
const dir = await Deno.makeTempDir({ prefix: "checkpoint_hash_bench_" });
const one = join(dir, "one");
const shards = join(dir, "shards");
await Deno.mkdir(one);
await Deno.mkdir(shards);
const chunk = new Uint8Array(64 * MIB);
crypto.getRandomValues(chunk.subarray(0, 65536));
for (let i = 1; i < 1024; i++) chunk.copyWithin(i * 65536, 0, 65536);
{
  using file = await Deno.open(join(one, "model_states.pt"), { write: true, create: true });
  for (let i = 0; i < 4; i++) await file.write(chunk);
}
for (let i = 0; i < 8; i++) {
  await Deno.writeFile(
    join(shards, `zero_pp_rank_${i}_optim_states.pt`),
    chunk.subarray(0, 32 * MIB),
  );
}
const recorded = await hashCheckpoints(dir, [shards]);

Deno.bench("xxh128 streamed, 1 file × 256 MiB", { group: "hash", baseline: true }, async () => {
  await hashCheckpoints(dir, [one]);
});

Deno.bench("xxh128 streamed, 8 shards × 32 MiB, 4 at a time", { group: "hash" }, async () => {
  await hashCheckpoints(dir, [shards]);
});

Deno.bench("verify before reuse (full re-hash), 8 shards × 32 MiB", { group: "hash" }, async () => {
  if (await checkpointChanged(dir, recorded, "full") !== null) throw new Error("changed?");
});

Deno.bench(
  "verify before reuse above the limit (size + mtime + inode)",
  { group: "hash" },
  async () => {
    if (await checkpointChanged(dir, recorded, "auto", 0) !== null) throw new Error("changed?");
  },
);

Deno.bench(
  "sha-256 (WebCrypto, file read whole), 1 file × 256 MiB",
  { group: "hash" },
  async () => {
    await crypto.subtle.digest("SHA-256", await Deno.readFile(join(one, "model_states.pt")));
  },
);

// The hash alone, on the 64 MiB buffer in memory: why XXH3 rather than BLAKE3 or SHA-256.
const xxh = await createXXHash128();
const blake3 = await createBLAKE3();
Deno.bench("in memory: xxh128, 64 MiB", { group: "memory", baseline: true }, () => {
  xxh.init();
  xxh.update(chunk);
  xxh.digest();
});
Deno.bench("in memory: blake3 (hash-wasm), 64 MiB", { group: "memory" }, () => {
  blake3.init();
  blake3.update(chunk);
  blake3.digest();
});
Deno.bench("in memory: sha-256 (WebCrypto), 64 MiB", { group: "memory" }, async () => {
  await crypto.subtle.digest("SHA-256", chunk);
});

globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));
