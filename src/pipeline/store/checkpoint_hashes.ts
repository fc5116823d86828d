/**
 * Content hashes of the checkpoints a phase produced: every file of the split's checkpoint
 * folder and of the converter's universal folder, hashed in a stream with XXH3-128
 * (`hash-wasm`) when the phase completes and recorded in its `phase.json` as
 * `checkpoint_hashes`. Before a split or convert is reused, and by `parity report`, the files
 * are checked again: a changed, missing, added or truncated file makes the phase run again with
 * a note naming the file (docs/reliability.md).
 *
 * A checkpoint whose recorded size is above {@link FULL_VERIFY_LIMIT_BYTES} is checked by size,
 * mtime and inode only unless full verification is asked for (`--verify-checkpoints`): re-reading
 * hundreds of gigabytes before every reuse would cost more than most phases save.
 *
 * XXH3 is not a cryptographic hash: it catches storage faults (flipped bits, truncation, a
 * swapped or stale file), not a person who edits the results folder on purpose.
 *
 * @module
 */

import { createXXHash128 } from "hash-wasm";
import { isAbsolute, join, relative } from "node:path";

/** The hash recorded for every checkpoint file. */
const CHECKPOINT_HASH_ALGORITHM = "xxh128";

/**
 * Checkpoints up to this many bytes are re-hashed in full before every reuse (at the measured
 * ~1 GB/s streamed that is a few seconds at most); larger ones are checked by size + mtime +
 * inode unless `--verify-checkpoints` asks for the full hash.
 */
const FULL_VERIFY_LIMIT_BYTES = 4 * 1024 ** 3;

/** {@link FULL_VERIFY_LIMIT_BYTES} in GiB, for help texts. */
export const FULL_VERIFY_LIMIT_GIB = FULL_VERIFY_LIMIT_BYTES / 1024 ** 3;

/** Files hashed at once: reads of one overlap the hashing of another. */
const CONCURRENCY = 4;

/** Read size of the stream. */
const CHUNK_BYTES = 4 << 20;

/** What is recorded about one checkpoint file. */
export interface CheckpointFileRecord {
  /** Bytes. */
  size: number;
  /** Modification time in ms since the epoch (null where the filesystem has none). */
  mtime_ms: number | null;
  /** Inode number (null where the filesystem has none). */
  ino: number | null;
  /** XXH3-128 of the content, hex. */
  hash: string;
}

/** `checkpoint_hashes` of a phase.json. */
export interface CheckpointHashes {
  /** Always {@link CHECKPOINT_HASH_ALGORITHM}. */
  algorithm: string;
  /** Checkpoint folders hashed, relative to the phase folder. */
  roots: string[];
  /** Every file under the roots, by phase-folder-relative path. */
  files: Record<string, CheckpointFileRecord>;
  /** Total bytes hashed. */
  bytes: number;
  /** Seconds the hashing took. */
  seconds: number;
}

/** How hard a reuse checks a checkpoint. */
export type CheckpointVerifyMode = "auto" | "full";

/**
 * Compiles the hash's WebAssembly module ahead of time (tens of milliseconds, once per process),
 * so a phase can overlap it with its child instead of adding it to its wall time.
 */
export function warmCheckpointHasher(): Promise<void> {
  return createXXHash128().then(() => {});
}

/** Hashes every file under `roots` (absolute folders inside `phaseDir`; missing ones skipped). */
export async function hashCheckpoints(
  phaseDir: string,
  roots: readonly string[],
): Promise<CheckpointHashes> {
  const start = performance.now();
  const paths: string[] = [];
  const kept: string[] = [];
  for (const root of roots) {
    if (await walkFiles(root, paths)) kept.push(relative(phaseDir, root));
  }
  const files: Record<string, CheckpointFileRecord> = {};
  let bytes = 0;
  await inPool(paths, async (path, hasher) => {
    const record = await hashCheckpointFile(path, hasher);
    files[relative(phaseDir, path)] = record;
    bytes += record.size;
  });
  return {
    algorithm: CHECKPOINT_HASH_ALGORITHM,
    roots: kept,
    files: Object.fromEntries(Object.entries(files).sort(([a], [b]) => a.localeCompare(b))),
    bytes,
    seconds: Math.round(performance.now() - start) / 1000,
  };
}

/** A reusable XXH3-128 state (instantiating the WebAssembly module costs more than a small file). */
export type CheckpointHasher = Awaited<ReturnType<typeof createXXHash128>>;

/** Streams one file through XXH3-128; size, mtime and inode come from the open handle. */
async function hashCheckpointFile(
  path: string,
  hasher?: CheckpointHasher,
): Promise<CheckpointFileRecord> {
  hasher ??= await createXXHash128();
  hasher.init();
  using file = await Deno.open(path, { read: true });
  const info = await file.stat();
  // Most checkpoint folders hold many small files: a buffer sized to the file, not 4 MiB each.
  const buffer = new Uint8Array(Math.min(CHUNK_BYTES, Math.max(info.size + 1, 4096)));
  let size = 0;
  for (;;) {
    const n = await file.read(buffer);
    if (n === null) break;
    hasher.update(buffer.subarray(0, n));
    size += n;
  }
  return { size, mtime_ms: info.mtime?.getTime() ?? null, ino: info.ino, hash: hasher.digest() };
}

/**
 * `null` when the checkpoint files recorded for `phaseDir` are all there, unchanged, with no file
 * added under the recorded roots; else what differs, naming the file. `auto` re-hashes a
 * checkpoint up to `limitBytes` and compares size, mtime and inode of a larger one; `full` always
 * re-hashes.
 */
export async function checkpointChanged(
  phaseDir: string,
  recorded: CheckpointHashes,
  mode: CheckpointVerifyMode = "auto",
  limitBytes: number = FULL_VERIFY_LIMIT_BYTES,
): Promise<string | null> {
  if (recorded.algorithm !== CHECKPOINT_HASH_ALGORITHM) {
    return `its checkpoint hashes use ${recorded.algorithm}, not ${CHECKPOINT_HASH_ALGORITHM}`;
  }
  const outside = [...recorded.roots, ...Object.keys(recorded.files)].find((rel) =>
    isAbsolute(rel) || rel.split(/[\\/]/).includes("..")
  );
  if (outside !== undefined) {
    return `its phase.json hashes a checkpoint file outside its folder: ${outside}`;
  }
  const present: string[] = [];
  for (const root of recorded.roots) await walkFiles(join(phaseDir, root), present);
  const added = present.map((p) => relative(phaseDir, p)).find((rel) => !(rel in recorded.files));
  if (added !== undefined) return `checkpoint file ${added} appeared after the phase completed`;
  const full = mode === "full" || recorded.bytes <= limitBytes;
  let problem: string | null = null;
  await inPool(Object.keys(recorded.files), async (rel, hasher) => {
    if (problem !== null) return;
    const want = recorded.files[rel];
    const why = await fileProblem(join(phaseDir, rel), want, full, hasher);
    if (why !== null && problem === null) problem = `checkpoint file ${rel} ${why}`;
  });
  return problem;
}

async function fileProblem(
  path: string,
  want: CheckpointFileRecord,
  full: boolean,
  hasher: CheckpointHasher,
): Promise<string | null> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch {
    return "is missing";
  }
  if (info.size !== want.size) return `has ${info.size} bytes, ${want.size} when it was saved`;
  if (!full) {
    if (want.ino !== null && info.ino !== want.ino) return "was replaced (another inode)";
    if (want.mtime_ms !== null && info.mtime?.getTime() !== want.mtime_ms) {
      return "was modified after the phase completed (mtime differs)";
    }
    return null;
  }
  const now = await hashCheckpointFile(path, hasher).catch(() => null);
  if (now === null) return "cannot be read";
  return now.hash === want.hash
    ? null
    : `changed since the phase completed (${CHECKPOINT_HASH_ALGORITHM} differs)`;
}

/** Appends every file under `dir` to `into`; false when `dir` does not exist. */
async function walkFiles(dir: string, into: string[]): Promise<boolean> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(dir);
  } catch {
    return false;
  }
  if (info.isFile) {
    into.push(dir);
    return true;
  }
  const names = (await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name).sort();
  for (const name of names) await walkFiles(join(dir, name), into);
  return true;
}

/** Runs `task` over `items`, {@link CONCURRENCY} at a time, each lane with its own hasher. */
async function inPool<T>(
  items: readonly T[],
  task: (item: T, hasher: CheckpointHasher) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    const hasher = await createXXHash128();
    while (next < items.length) await task(items[next++], hasher);
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, items.length) }, worker));
}
