/**
 * The results layout (README.md, "Results folder"): `<results>/<experiment>/<run-id>/`, a `latest`
 * link naming the newest run, and atomic JSON writes so a reader never sees half a file.
 * Every path this module writes is checked to stay inside the results folder.
 *
 * @module
 */

import { basename, isAbsolute, join, relative, resolve, sep as SEP } from "node:path";
import { HARNESS_REDACTION, writeTextAtomic } from "../../process/mod.ts";

/**
 * Folder-safe form of an experiment name: `name[k=v,k2=v2]` lives in `name@k=v,k2=v2`, and any
 * character other than letters, digits and `_ . , = @ -` becomes `_`. Trainers build globs and
 * regexes from their checkpoint paths: DeepSpeed's loader globs the folder (brackets match
 * nothing) and `ds_to_universal` compiles the path into an unescaped regex (parentheses and `+`
 * break it), so a results path must hold no such syntax.
 */
export function experimentFolderName(name: string): string {
  return name.replace(/\[(.*)\]$/, "@$1").replace(/[^A-Za-z0-9_.,=@-]/g, "_");
}

/**
 * A sortable run id: UTC time to the second, then the milliseconds and a short hash
 * (`20261129T101500Z-123a9f`), so two runs in the same second still sort by start time.
 */
export function newRunId(now: Date, salt: string): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
  let h = 0x811c9dc5;
  const text = `${salt}|${now.getTime()}|${Math.random()}`;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  const ms = String(now.getUTCMilliseconds()).padStart(3, "0");
  return `${stamp}-${ms}${h.toString(16).padStart(8, "0").slice(0, 3)}`;
}

/** Throws unless `path` lies strictly inside `root` (guards every write of a run). */
export function assertInside(root: string, path: string): void {
  const rel = relative(resolve(root), resolve(path));
  if (rel === "" || rel === ".." || rel.startsWith(`..${SEP}`) || isAbsolute(rel)) {
    throw new Error(`refusing to write outside the results folder: ${path}`);
  }
}

/** Writes pretty JSON atomically, with a trailing newline, every string redacted. */
export async function writeJsonAtomic(path: string, value: unknown): Promise<void> {
  await writeTextAtomic(path, JSON.stringify(HARNESS_REDACTION.redactValue(value), null, 2) + "\n");
}

const queuedWrites = new Map<string, Promise<void>>();

/**
 * {@linkcode writeJsonAtomic} in call order per path: each write starts once the earlier ones
 * to the same path have settled and serializes `value` as it is then, so a file updated while
 * children start (the manifest) never ends up older than its last write. Callers need not
 * wait for the write before going on; the promise rejects with its own write's error.
 */
export function writeJsonInTurn(path: string, value: unknown): Promise<void> {
  const write = (queuedWrites.get(path) ?? Promise.resolve()).then(
    () => writeJsonAtomic(path, value),
    () => writeJsonAtomic(path, value),
  );
  const settled = write.then(() => {}, () => {});
  queuedWrites.set(path, settled);
  settled.then(() => {
    if (queuedWrites.get(path) === settled) queuedWrites.delete(path);
  });
  return write;
}

/** Whether a path exists (following links); false for an undefined path. */
export async function pathExists(path: string | undefined): Promise<boolean> {
  if (!path) return false;
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

/** Reads JSON, or returns undefined when the file does not exist. */
export async function readJsonIfExists<T>(path: string): Promise<T | undefined> {
  try {
    return JSON.parse(await Deno.readTextFile(path)) as T;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}

/** Points `<experimentDir>/latest` at `runId` (a relative symlink, replaced atomically). */
export async function updateLatest(experimentDir: string, runId: string): Promise<void> {
  const link = join(experimentDir, "latest");
  const tmp = `${link}.${Deno.pid}.tmp`;
  try {
    await Deno.remove(tmp);
  } catch { /* not there */ }
  await Deno.symlink(runId, tmp);
  await Deno.rename(tmp, link);
}

/** Resolves `<experimentDir>/latest` to a run folder, if any. */
export async function latestRunDir(experimentDir: string): Promise<string | undefined> {
  try {
    const target = await Deno.readLink(join(experimentDir, "latest"));
    return resolve(experimentDir, target);
  } catch {
    return undefined;
  }
}

/** Run folders of an experiment, oldest first (run ids sort by time). */
export async function listRuns(experimentDir: string): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const e of Deno.readDir(experimentDir)) {
      if (e.isDirectory && /^\d{8}T\d{6}Z-/.test(e.name)) out.push(join(experimentDir, e.name));
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return out.sort();
}

/**
 * The run folders of every other experiment in `resultsDir`, oldest first by run id (which
 * starts with its time), so the newest equal phase of the suite is found first.
 */
export async function listSuiteRuns(resultsDir: string, experimentDir: string): Promise<string[]> {
  const runs: string[] = [];
  try {
    for await (const e of Deno.readDir(resultsDir)) {
      const dir = join(resultsDir, e.name);
      if (!e.isDirectory || resolve(dir) === resolve(experimentDir)) continue;
      runs.push(...await listRuns(dir));
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return runs.sort((a, b) => basename(a).localeCompare(basename(b)));
}

/** Attempt folders (a retried phase's earlier attempts, moved aside) are named `attempt-<n>`. */
export const ATTEMPT_DIR_PATTERN: RegExp = /^attempt-\d+$/;
