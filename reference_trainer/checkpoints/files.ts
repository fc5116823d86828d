/**
 * Atomic checkpoint folders: files are written into a temporary sibling folder, a completion
 * marker listing every file's size and hash is written last, and only then is the folder
 * renamed into place. A folder without its marker, or whose files do not match the marker, is
 * never loaded.
 *
 * @module
 */

import { basename, dirname, join } from "node:path";
import { CheckpointError, hashBytes } from "../model/mod.ts";

/** Marker file name of a native tag folder. */
export const NATIVE_MARKER = "checkpoint_complete.json";
/** Marker file name of a universal folder. */
export const UNIVERSAL_MARKER = "universal_complete.json";

/** Contents of a completion marker. */
export interface Marker {
  /** Format name of the folder. */
  format: string;
  /** Optimizer step the folder holds. */
  global_step: number;
  /** Every file (relative path) with its size and hash. */
  files: Record<string, { bytes: number; hash: string }>;
}

/** Environment variable that makes a save crash half-way (a test hook for harness tests). */
export const CRASH_IN_SAVE_ENV = "PARITY_REFERENCE_CRASH_IN_SAVE";

/** Exit code of a save crashed through {@link CRASH_IN_SAVE_ENV}. */
export const CRASH_EXIT_CODE = 70;

/**
 * Writes `files` (relative path → bytes) as folder `target`, atomically; returns `target`.
 * Stale temporary folders of earlier crashed saves of the same target are removed first.
 *
 * With `crashHalfway` the save behaves like a naive, non-atomic trainer killed mid-write: half
 * the files go straight into `target`, no marker is written, and the process exits with
 * {@link CRASH_EXIT_CODE}.
 */
export function writeFolderAtomically(
  target: string,
  files: Map<string, Uint8Array>,
  marker: { name: string; format: string; globalStep: number },
  crashHalfway = false,
): string {
  const parent = dirname(target);
  Deno.mkdirSync(parent, { recursive: true });
  const stalePrefix = `.${basename(target)}.tmp-`;
  for (const entry of Deno.readDirSync(parent)) {
    if (entry.name.startsWith(stalePrefix)) removeIfExists(join(parent, entry.name));
  }
  const tmp = crashHalfway ? target : join(parent, `${stalePrefix}${Deno.pid}`);
  removeIfExists(tmp);
  Deno.mkdirSync(tmp, { recursive: true });
  const listing: Marker["files"] = {};
  const sorted = [...files.entries()].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
  for (const [i, [rel, bytes]] of sorted.entries()) {
    if (crashHalfway && i >= sorted.length / 2) Deno.exit(CRASH_EXIT_CODE);
    const path = join(tmp, rel);
    Deno.mkdirSync(dirname(path), { recursive: true });
    Deno.writeFileSync(path, bytes);
    listing[rel] = { bytes: bytes.length, hash: hashBytes(bytes) };
  }
  const body: Marker = { format: marker.format, global_step: marker.globalStep, files: listing };
  Deno.writeTextFileSync(join(tmp, marker.name), JSON.stringify(body, null, 1) + "\n");
  removeIfExists(target);
  Deno.renameSync(tmp, target);
  return target;
}

/**
 * Writes a small text file atomically (temp file + rename), e.g. `latest`. The trainer keeps this
 * writer apart from the harness's (`process/write_atomic.ts`, which redacts): it sits across the
 * process contract, may import only `affine`, and writes no secrets.
 */
export function writeTextAtomically(path: string, text: string): void {
  const tmp = `${path}.tmp-${Deno.pid}`;
  Deno.writeTextFileSync(tmp, text);
  Deno.renameSync(tmp, path);
}

function removeIfExists(path: string): void {
  try {
    Deno.removeSync(path, { recursive: true });
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
}

/** True when `path` is an existing directory. */
export function isDir(path: string): boolean {
  try {
    return Deno.statSync(path).isDirectory;
  } catch {
    return false;
  }
}

/** True when `path` is an existing file. */
export function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/**
 * Reads a folder's completion marker and checks every listed file (present, same size, same
 * hash). Returns the file contents by relative path.
 */
export function readVerifiedFolder(
  folder: string,
  markerName: string,
): { marker: Marker; files: Map<string, Uint8Array> } {
  const marker = readMarker(folder, markerName);
  const files = new Map<string, Uint8Array>();
  for (const rel of Object.keys(marker.files)) {
    files.set(rel, readVerifiedFile(folder, rel, marker, markerName));
  }
  return { marker, files };
}

/**
 * Reads a folder's completion marker: the folder must exist and hold a well-formed marker, else
 * the folder was not completely written and must not be loaded.
 */
export function readMarker(folder: string, markerName: string): Marker {
  if (!isDir(folder)) throw new CheckpointError(`checkpoint folder ${folder} does not exist`);
  const markerPath = join(folder, markerName);
  if (!isFile(markerPath)) {
    throw new CheckpointError(
      `${folder} has no ${markerName}: it was not completely written, refusing to load it`,
    );
  }
  try {
    const marker = JSON.parse(Deno.readTextFileSync(markerPath));
    if (typeof marker?.files !== "object" || marker.files === null) throw new Error("no files");
    return marker;
  } catch {
    throw new CheckpointError(`${markerPath} is corrupt (not a completion marker)`);
  }
}

/** Reads one file a marker lists, checking it is present with the recorded size and hash. */
export function readVerifiedFile(
  folder: string,
  rel: string,
  marker: Marker,
  markerName: string,
): Uint8Array {
  const path = join(folder, rel);
  const want = marker.files[rel];
  if (!want || !isFile(path)) throw new CheckpointError(`checkpoint file ${path} is missing`);
  const bytes = Deno.readFileSync(path);
  if (bytes.length !== want.bytes) {
    throw new CheckpointError(
      `checkpoint file ${path} has ${bytes.length} bytes, ${markerName} records ${want.bytes} (truncated or corrupt)`,
    );
  }
  if (hashBytes(bytes) !== want.hash) {
    throw new CheckpointError(
      `checkpoint file ${path} does not match the hash in ${markerName} (corrupt)`,
    );
  }
  return bytes;
}
