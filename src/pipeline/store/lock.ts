/**
 * One run at a time per experiment results folder. A run holds `<experimentDir>/.lock`, a JSON
 * file naming its process; a second run either waits for it or stops with a message naming the
 * holder. A lock whose process is gone (crash, `kill -9`, reboot) is taken over, and said so.
 *
 * How races are settled: every look at the lock file (create, inspect, take over, release) happens
 * while holding a short kernel `flock` on the experiment folder itself, so two acquirers never
 * decide on the same view; the kernel drops that flock when a process dies, so it can never go
 * stale. The lock file is created with `createNew` (O_EXCL) and a takeover replaces it by renaming
 * a complete file over it, so a reader never sees a half-written lock. (`flock` is local to one
 * machine: on NFS shared by several hosts the `.lock` file with its hostname is the only guard.)
 *
 * Whether the holder is alive (Linux `/proc`):
 * - a lock written on another host cannot be checked and counts as held;
 * - a lock written before the last reboot (`boot_id` differs) is stale;
 * - no `/proc/<pid>`, or a zombie, is stale;
 * - PID reuse: the lock records the holder's start time in clock ticks (field 22 of
 *   `/proc/<pid>/stat`); a live process with that PID but another start time is someone else, so
 *   the lock is stale. A lock without that field (written by another tool) is stale when the
 *   process started after the lock's `started_at` or its command line does not mention `deno`.
 *
 * ```ts
 * import { acquireRunLock } from "./lock.ts";
 *
 * await using lock = await acquireRunLock("results/quickstart", {
 *   wait: true,
 *   onWait: (h) => console.error(`waiting for PID ${h.pid} (started ${h.started_at})`),
 *   onTakeover: (h, why) => console.error(`took over the lock of PID ${h.pid}: ${why}`),
 * });
 * // ... run the experiment; the lock is released when `lock` goes out of scope.
 * ```
 *
 * @module
 */

import { join, relative, resolve } from "node:path";
import { EXIT_CODES, HarnessError } from "../../types/mod.ts";
import { writeTextAtomic } from "../../process/mod.ts";

/** Name of the lock file inside an experiment results folder. */
export const LOCK_FILE_NAME = ".lock";

/** Contents of a lock file. */
export interface LockHolder {
  /** Process id of the holder. */
  pid: number;
  /** When the lock was taken (ISO 8601, UTC). */
  started_at: string;
  /** Host the holder runs on. */
  hostname: string;
  /** The holder's command line. */
  argv: string[];
  /** Holder start time in clock ticks since boot (`/proc/<pid>/stat` field 22), against PID reuse. */
  proc_start?: number;
  /** `/proc/sys/kernel/random/boot_id` when the lock was taken, to notice reboots. */
  boot_id?: string;
  /** Random id of this acquisition, so release removes only its own lock. */
  token?: string;
}

/** How {@linkcode acquireRunLock} behaves when another run holds the lock. */
export interface AcquireLockOptions {
  /** Wait for the holder to release instead of failing (`--wait`). Default false. */
  wait?: boolean;
  /** Poll interval while waiting, milliseconds. Default 500. */
  pollMs?: number;
  /** Give up waiting after this many milliseconds (throws {@linkcode LockHeldError}). Default: never. */
  timeoutMs?: number;
  /** Stops waiting early (e.g. on SIGINT); the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Called once, when the first attempt finds a live holder and `wait` is set. */
  onWait?(holder: LockHolder): void;
  /** Called when a lock whose process is gone is taken over; `reason` says why it was stale. */
  onTakeover?(holder: LockHolder, reason: string): void;
}

/** A held run lock. */
export interface RunLock {
  /** Path of the lock file. */
  readonly path: string;
  /** What this lock wrote into the file. */
  readonly holder: LockHolder;
  /**
   * Removes the lock file if it is still ours (same token); returns whether it removed it.
   * Calling it again is harmless.
   */
  release(): Promise<boolean>;
  /** Same as {@linkcode RunLock.release}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** Another live run holds the lock (and `wait` was not set, or waiting timed out): exit 3. */
export class LockHeldError extends HarnessError {
  /** The lock file's contents. */
  readonly holder: LockHolder;
  /** The experiment results folder. */
  readonly experimentDir: string;

  /** Builds the message naming the holder's PID and start time. */
  constructor(experimentDir: string, holder: LockHolder, waitedMs?: number) {
    const where = displayPath(experimentDir);
    const who = `PID ${holder.pid}${
      holder.hostname && holder.hostname !== Deno.hostname() ? ` on ${holder.hostname}` : ""
    }, started ${displayTime(holder.started_at)}`;
    super(
      waitedMs === undefined
        ? `another run holds ${where} (${who}); wait for it or pass --wait`
        : `another run still holds ${where} (${who}) after waiting ${
          Math.round(waitedMs / 1000)
        } s`,
      EXIT_CODES.ERROR,
    );
    this.holder = holder;
    this.experimentDir = experimentDir;
  }
}

/**
 * Takes the run lock of an experiment results folder (creating the folder if needed).
 *
 * Resolves once the lock is ours. When a live run holds it: without `wait`, rejects with
 * {@linkcode LockHeldError}; with `wait`, polls until it is released (calling `onWait` once), until
 * `timeoutMs` (then {@linkcode LockHeldError}) or until `signal` aborts. A lock whose process is gone
 * is replaced atomically and reported through `onTakeover`. Of several acquirers racing, in one
 * process or many, exactly one wins.
 */
export async function acquireRunLock(
  experimentDir: string,
  options: AcquireLockOptions = {},
): Promise<RunLock> {
  const dir = resolve(experimentDir);
  await Deno.mkdir(dir, { recursive: true });
  const pollMs = Math.max(10, options.pollMs ?? 500);
  const started = performance.now();
  const mine = await currentHolder();
  let reportedWait = false;
  for (;;) {
    options.signal?.throwIfAborted();
    const outcome = await withDirectoryGuard(dir, () => tryTake(dir, mine));
    if (outcome.kind === "acquired") {
      if (outcome.tookOver) options.onTakeover?.(outcome.tookOver.holder, outcome.tookOver.reason);
      return newRunLock(dir, mine);
    }
    if (!options.wait) throw new LockHeldError(dir, outcome.holder);
    const waited = performance.now() - started;
    if (options.timeoutMs !== undefined && waited >= options.timeoutMs) {
      throw new LockHeldError(dir, outcome.holder, waited);
    }
    if (!reportedWait) {
      reportedWait = true;
      options.onWait?.(outcome.holder);
    }
    await sleep(pollMs, options.signal);
  }
}

/**
 * Reads the lock of an experiment results folder without taking it: the holder, and whether that
 * process is still alive (with the reason when it is not). Undefined when nobody holds it.
 */
export async function inspectRunLock(
  experimentDir: string,
): Promise<{ holder: LockHolder; alive: boolean; reason: string } | undefined> {
  const read = await readLockFile(join(resolve(experimentDir), LOCK_FILE_NAME));
  if (read === undefined) return undefined;
  if (read.holder === undefined) {
    return { holder: unknownHolder(), alive: false, reason: "the lock file is unreadable" };
  }
  return { holder: read.holder, ...(await holderLiveness(read.holder)) };
}

type TakeOutcome =
  | { kind: "acquired"; tookOver?: { holder: LockHolder; reason: string } }
  | { kind: "held"; holder: LockHolder };

/** One attempt, run under the directory guard. */
async function tryTake(dir: string, mine: LockHolder): Promise<TakeOutcome> {
  const path = join(dir, LOCK_FILE_NAME);
  const text = JSON.stringify(mine, null, 2) + "\n";
  try {
    const file = await Deno.open(path, { write: true, createNew: true });
    try {
      await file.write(new TextEncoder().encode(text));
      await file.sync();
    } finally {
      file.close();
    }
    return { kind: "acquired" };
  } catch (e) {
    if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
  }
  const read = await readLockFile(path);
  if (read === undefined) return tryTake(dir, mine); // released between our two looks
  let stale: { holder: LockHolder; reason: string };
  if (read.holder === undefined) {
    // Writers fill the file under the guard, so garbage means a writer died mid-write, or a
    // foreign tool wrote it; give the latter a moment before calling it stale.
    if (Date.now() - read.mtimeMs < 2000) return { kind: "held", holder: unknownHolder() };
    stale = { holder: unknownHolder(), reason: "the lock file is unreadable" };
  } else {
    const live = await holderLiveness(read.holder);
    if (live.alive) return { kind: "held", holder: read.holder };
    stale = { holder: read.holder, reason: live.reason };
  }
  await writeTextAtomic(path, text); // replaces the stale file in one step
  return { kind: "acquired", tookOver: stale };
}

function newRunLock(dir: string, mine: LockHolder): RunLock {
  const path = join(dir, LOCK_FILE_NAME);
  const release = () =>
    withDirectoryGuard(dir, async () => {
      const read = await readLockFile(path);
      if (read?.holder?.token !== mine.token || read?.holder?.pid !== mine.pid) return false;
      await Deno.remove(path);
      return true;
    });
  return {
    path,
    holder: mine,
    release,
    async [Symbol.asyncDispose]() {
      await release();
    },
  };
}

/** Runs `fn` while holding an exclusive `flock` on the folder (released by the kernel on death). */
async function withDirectoryGuard<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  const handle = await Deno.open(dir, { read: true });
  try {
    await handle.lock(true);
    return await fn();
  } finally {
    handle.close(); // closing drops the flock
  }
}

async function readLockFile(
  path: string,
): Promise<{ holder?: LockHolder; mtimeMs: number } | undefined> {
  let text: string;
  let mtimeMs: number;
  try {
    text = await Deno.readTextFile(path);
    mtimeMs = (await Deno.stat(path)).mtime?.getTime() ?? 0;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
  try {
    const value = JSON.parse(text);
    if (
      typeof value === "object" && value !== null && Number.isInteger(value.pid) && value.pid > 0 &&
      typeof value.started_at === "string"
    ) {
      return {
        holder: {
          ...value,
          hostname: typeof value.hostname === "string" ? value.hostname : "",
          argv: Array.isArray(value.argv) ? value.argv.map(String) : [],
        },
        mtimeMs,
      };
    }
  } catch { /* unreadable: fall through */ }
  return { mtimeMs };
}

function unknownHolder(): LockHolder {
  return { pid: 0, started_at: "unknown", hostname: "", argv: [] };
}

/** Decides whether a lock's process is still the one that wrote it (see the module doc). */
async function holderLiveness(h: LockHolder): Promise<{ alive: boolean; reason: string }> {
  if (h.hostname && h.hostname !== Deno.hostname()) {
    return { alive: true, reason: `held on host ${h.hostname}, which cannot be checked from here` };
  }
  const bootId = await readBootId();
  if (h.boot_id && bootId && h.boot_id !== bootId) {
    return { alive: false, reason: "the machine has rebooted since the lock was taken" };
  }
  const stat = await readProcStat(h.pid);
  if (stat === undefined) return { alive: false, reason: `process ${h.pid} no longer exists` };
  if (stat.state === "Z" || stat.state === "X") {
    return { alive: false, reason: `process ${h.pid} has exited` };
  }
  if (h.proc_start !== undefined) {
    return stat.startTicks === h.proc_start
      ? { alive: true, reason: "alive" }
      : { alive: false, reason: `PID ${h.pid} now belongs to another process` };
  }
  // Lock written without a start time: judge by wall clock and command line.
  const lockedAt = Date.parse(h.started_at);
  const bootTime = await readBootTimeMs();
  if (Number.isFinite(lockedAt) && bootTime !== undefined) {
    const processStart = bootTime + (stat.startTicks / CLOCK_TICKS_PER_S) * 1000;
    if (processStart > lockedAt + 2000) {
      return {
        alive: false,
        reason: `PID ${h.pid} now belongs to a process started after the lock`,
      };
    }
  }
  const cmdline = await readCmdline(h.pid);
  if (cmdline !== undefined && !cmdline.some((a) => a.includes("deno"))) {
    return {
      alive: false,
      reason: `PID ${h.pid} now belongs to ${cmdline[0] ?? "another process"}`,
    };
  }
  return { alive: true, reason: "alive" };
}

/** USER_HZ: 100 on every mainstream Linux build (the kernel ABI fixes it for /proc). */
const CLOCK_TICKS_PER_S = 100;

async function readProcStat(
  pid: number,
): Promise<{ state: string; startTicks: number } | undefined> {
  let text: string;
  try {
    text = await Deno.readTextFile(`/proc/${pid}/stat`);
  } catch {
    return undefined;
  }
  // `comm` (field 2) may hold spaces and parentheses: fields after it start past the last ')'.
  const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return { state: rest[0], startTicks: Number(rest[19]) };
}

async function readCmdline(pid: number): Promise<string[] | undefined> {
  try {
    const text = await Deno.readTextFile(`/proc/${pid}/cmdline`);
    return text === "" ? undefined : text.replace(/\0$/, "").split("\0");
  } catch {
    return undefined;
  }
}

async function readBootId(): Promise<string | undefined> {
  try {
    return (await Deno.readTextFile("/proc/sys/kernel/random/boot_id")).trim() || undefined;
  } catch {
    return undefined;
  }
}

async function readBootTimeMs(): Promise<number | undefined> {
  try {
    const m = /^btime (\d+)$/m.exec(await Deno.readTextFile("/proc/stat"));
    return m ? Number(m[1]) * 1000 : undefined;
  } catch {
    return undefined;
  }
}

async function currentHolder(): Promise<LockHolder> {
  const holder: LockHolder = {
    pid: Deno.pid,
    started_at: new Date().toISOString(),
    hostname: Deno.hostname(),
    argv: (await readCmdline(Deno.pid)) ?? [Deno.execPath(), ...Deno.args],
    token: crypto.randomUUID(),
  };
  const stat = await readProcStat(Deno.pid);
  if (stat && Number.isFinite(stat.startTicks)) holder.proc_start = stat.startTicks;
  const bootId = await readBootId();
  if (bootId) holder.boot_id = bootId;
  return holder;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function displayPath(dir: string): string {
  const rel = relative(Deno.cwd(), dir);
  return rel && !rel.startsWith("..") && resolve(rel) !== rel ? rel : dir;
}

function displayTime(iso: string): string {
  return iso.replace(/\.\d+Z$/, "Z");
}
