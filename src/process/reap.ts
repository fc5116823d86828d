/**
 * Reaping process groups left behind by a harness that died without cleaning up (SIGKILL, a
 * power cut of the parent, an OOM kill). Deno has no parent-death signal, so a detached child
 * group outlives such a harness; the next run finds it through the pid the dead harness recorded
 * and kills it — but only after proving the group is really that phase's: some member's
 * environment must carry the phase's `PARITY_RUN_DIR`, so a recycled pid is never hit.
 *
 * @module
 */

/** Members of process group `pgid` (Linux /proc; empty elsewhere). */
export async function groupMembers(pgid: number): Promise<number[]> {
  const members: number[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir("/proc"));
  } catch {
    return members;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const stat = await Deno.readTextFile(`/proc/${e.name}/stat`);
      // Fields after the parenthesised command: state ppid pgrp ...
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(rest[2]) === pgid && rest[0] !== "Z") members.push(Number(e.name));
    } catch {
      // The process ended while we looked.
    }
  }
  return members;
}

async function environHas(pid: number, entry: string): Promise<boolean> {
  try {
    const environ = await Deno.readTextFile(`/proc/${pid}/environ`);
    return environ.split("\0").includes(entry);
  } catch {
    return false;
  }
}

/**
 * Kills process group `pgid` if a live member's environment holds `NAME=value` exactly (the
 * identity the harness gave the phase). Returns whether a group was killed.
 */
export async function reapGroup(pgid: number, name: string, value: string): Promise<boolean> {
  const members = await groupMembers(pgid);
  const entry = `${name}=${value}`;
  let ours = false;
  for (const pid of members) {
    if (await environHas(pid, entry)) {
      ours = true;
      break;
    }
  }
  if (!ours) return false;
  try {
    Deno.kill(-pgid, "SIGKILL");
  } catch {
    return false;
  }
  return true;
}
