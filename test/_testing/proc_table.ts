/**
 * Reading the Linux process table (`/proc/<pid>/cmdline`), so tests can assert that no process
 * carrying a marker string survived. Zombies (exited but not yet reaped) have an empty cmdline and
 * therefore never match.
 *
 * @module
 */

/** A live process found in the process table. */
export interface ProcessEntry {
  /** Process id. */
  pid: number;
  /** Its argv as read from `/proc/<pid>/cmdline`. */
  argv: string[];
}

/**
 * List live processes (other than the calling one) whose command line contains `marker`.
 * Processes that exit while the table is being read are skipped.
 */
export async function findProcesses(marker: string): Promise<ProcessEntry[]> {
  if (marker === "") throw new TypeError("findProcesses: marker must not be empty");
  const found: ProcessEntry[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const pid = Number(entry.name);
    if (pid === Deno.pid) continue;
    let raw: Uint8Array;
    try {
      raw = await Deno.readFile(`/proc/${pid}/cmdline`);
    } catch {
      continue; // exited meanwhile, or not readable
    }
    if (raw.length === 0) continue;
    const text = new TextDecoder().decode(raw);
    if (!text.includes(marker)) continue;
    found.push({ pid, argv: text.replace(/\0$/, "").split("\0") });
  }
  return found.sort((a, b) => a.pid - b.pid);
}

/**
 * Wait until no process matching `marker` is left, polling every 50 ms for at most `timeoutMs`
 * (signal delivery is asynchronous, so a process SIGKILLed a moment ago may still be listed).
 * Returns the survivors — an empty array means none.
 */
export async function waitForNoProcesses(
  marker: string,
  timeoutMs = 2000,
): Promise<ProcessEntry[]> {
  const deadline = performance.now() + timeoutMs;
  while (true) {
    const left = await findProcesses(marker);
    if (left.length === 0 || performance.now() >= deadline) return left;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A marker unlikely to occur in any other command line, for tagging test processes. */
export function uniqueMarker(prefix = "parity-test"): string {
  return `${prefix}-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`;
}
