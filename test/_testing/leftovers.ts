/**
 * What a results folder leaves on the machine and on disk, for the kill, soak and full-disk
 * runs: live processes whose environment names a phase folder inside it, lock files and `*.tmp`
 * files.
 *
 * @module
 */

import { join } from "node:path";

/** Pids of live processes whose `PARITY_RUN_DIR` lies inside `resultsDir`. */
export async function processesOf(resultsDir: string): Promise<number[]> {
  const out: number[] = [];
  for await (const e of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(e.name) || Number(e.name) === Deno.pid) continue;
    try {
      const environ = await Deno.readTextFile(`/proc/${e.name}/environ`);
      if (environ.split("\0").some((v) => v.startsWith(`PARITY_RUN_DIR=${resultsDir}/`))) {
        out.push(Number(e.name));
      }
    } catch { /* gone, or a kernel thread */ }
  }
  return out;
}

/** Lock files (`.lock`) and `*.tmp` files anywhere under `dir` (symlinks not followed). */
export async function leftovers(dir: string): Promise<{ locks: string[]; tmp: string[] }> {
  const locks: string[] = [];
  const tmp: string[] = [];
  const walk = async (d: string) => {
    for await (const e of Deno.readDir(d)) {
      const p = join(d, e.name);
      if (e.name === ".lock") locks.push(p);
      else if (e.name.endsWith(".tmp")) tmp.push(p);
      else if (e.isDirectory) await walk(p);
    }
  };
  await walk(dir);
  return { locks, tmp };
}

/** Open file descriptors of this process. */
export function openFds(): number {
  return [...Deno.readDirSync("/proc/self/fd")].length;
}
