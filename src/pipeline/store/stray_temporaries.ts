/**
 * Temporary files a killed harness left behind. Every atomic write of the harness goes through a
 * sibling `<name>.<pid>.<n>.tmp` (or `latest.<pid>.tmp`, `.lock.<pid>.<id>.tmp`) renamed over its
 * target; SIGKILL between the two leaves the temporary file. The next run of the experiment
 * removes those whose writer is gone, so a results folder never keeps half-written files.
 *
 * @module
 */

import { join, relative } from "node:path";
import { latestRunDir } from "./run_store.ts";

/** `<anything>.<pid>.<n>.tmp` or `<anything>.<pid>.tmp`, as the harness names them. */
const TEMPORARY = /\.(\d+)(?:\.[0-9a-z]+)?\.tmp$/;

/**
 * Removes the harness's temporary files of dead writers from the experiment folder itself and
 * from every one of `earlierRuns` (the run folders but the current one) not older than `latest`
 * (an older run was finished, and cleaned, by the run that became `latest` after it). Returns one note per removed file. Call while holding the
 * experiment's lock.
 */
export async function removeStrayTemporaries(
  experimentDir: string,
  earlierRuns: readonly string[],
): Promise<string[]> {
  const latest = earlierRuns.length > 0 ? await latestRunDir(experimentDir) : undefined;
  const runs = earlierRuns.filter((run) => latest === undefined || run >= latest);
  const found: string[] = [];
  await collect(experimentDir, found, false);
  for (const run of runs) await collect(run, found, true);
  const notes: string[] = [];
  for (const path of found) {
    const pid = Number(TEMPORARY.exec(path)![1]);
    if (pid === Deno.pid || (await alive(pid))) continue;
    try {
      await Deno.remove(path);
      notes.push(`removed a temporary file a killed run left: ${relative(experimentDir, path)}`);
    } catch { /* gone meanwhile */ }
  }
  return notes;
}

async function collect(dir: string, into: string[], deep: boolean): Promise<void> {
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(dir));
  } catch {
    return;
  }
  for (const e of entries) {
    const path = join(dir, e.name);
    if ((e.isFile || e.isSymlink) && TEMPORARY.test(e.name)) into.push(path);
    else if (deep && e.isDirectory) await collect(path, into, true);
  }
}

async function alive(pid: number): Promise<boolean> {
  try {
    await Deno.stat(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
}
