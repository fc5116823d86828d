/**
 * Run one supervised child process: its own process group, output streamed line by line to log
 * files, a timeout that takes down the whole group, and a plain result instead of exceptions.
 *
 * @module
 */

import { LineSplitter } from "./_line_splitter.ts";
import { LogTail } from "./_log_tail.ts";
import { getInterruption, registerLiveChild } from "./_live_children.ts";

/** Default time between SIGTERM and SIGKILL when a child group is stopped. */
export const DEFAULT_GRACE_MS = 5000;

/**
 * Default cap on each log file (stdout.log, stderr.log): past it the file's content moves to
 * `<log>.1` (replacing an older one) and the log starts again, so the newest output is kept and
 * at most twice the cap is on disk.
 */
const DEFAULT_LOG_CAP_BYTES = 256 * 1024 * 1024;

/** How long to keep reading output after the group was killed (an escaped process may hold a pipe). */
const DRAIN_LIMIT_MS = 2000;

/** Which output stream a line came from. */
export type OutputStream = "stdout" | "stderr";

/** Final status of a child: `ok` (exit 0), `failed`, `timeout` or `interrupted` (harness stopped it). */
export type ChildStatus = "ok" | "failed" | "timeout" | "interrupted";

/** What to run and how to supervise it. */
export interface ChildSpec {
  /** Executable and arguments; never passed through a shell. `argv[0]` is looked up on PATH. */
  argv: string[];
  /** Extra environment variables (merged over the harness's own unless `clearEnv`). */
  env?: Record<string, string>;
  /** Start from an empty environment instead of inheriting the harness's. */
  clearEnv?: boolean;
  /** Working directory (must exist). */
  cwd?: string;
  /** Wall-clock limit in milliseconds (none when undefined or Infinity); then SIGTERM, then SIGKILL. */
  timeoutMs?: number;
  /** Milliseconds between SIGTERM and SIGKILL (default {@linkcode DEFAULT_GRACE_MS}). */
  graceMs?: number;
  /** Log file for stdout; appended to, parent folder created. */
  stdoutPath: string;
  /** Log file for stderr; appended to, parent folder created. */
  stderrPath: string;
  /** Cap of each log file in bytes (default {@linkcode DEFAULT_LOG_CAP_BYTES}). */
  logCapBytes?: number;
  /**
   * Called for every complete line (and a final unterminated one), in arrival order. `\n`,
   * `\r\n` and a lone `\r` end a line; a line is cut at 1 MiB (the log file keeps every byte).
   */
  onLine?: (stream: OutputStream, line: string) => void;
  /** Aborting it stops the child like an interruption (TERM, then KILL after the grace period). */
  signal?: AbortSignal;
  /**
   * Called once right after the spawn with the child's pid (also its process group id), e.g. to
   * record it so a later harness can reap the group if this one dies without cleaning up.
   */
  onSpawn?: (pid: number) => void;
}

/** How a child ended. */
export interface ChildResult {
  /** `ok`, `failed`, `timeout` or `interrupted`. */
  status: ChildStatus;
  /** Exit code, or `null` when the process was killed by a signal or never started. */
  exitCode: number | null;
  /** Name of the signal that killed the group leader (e.g. `"SIGKILL"`), else `null`. */
  signal: string | null;
  /** Seconds from spawn until the child exited and its output was drained. */
  wallS: number;
  /** Process id (and process group id) of the child, `null` if it never started. */
  pid: number | null;
  /** One line saying why: `exited with code 1`, `timed out after 5 s`, `executable not found: foo`. */
  message: string;
  /** The last ~40 lines of stdout and stderr interleaved in arrival order, at most ~4 KB. */
  logTail: string;
}

/**
 * Run `spec.argv` as a supervised child in its own process group and resolve when it (and every
 * process it started) is gone. Never rejects for child problems: a missing executable, a non-zero
 * exit, a signal, a timeout or an interruption all come back as a {@linkcode ChildResult}. It does
 * throw for caller errors (empty argv, negative or NaN times) and when the log files cannot be
 * opened (nothing is spawned then).
 *
 * On timeout or interruption the whole group gets SIGTERM, then SIGKILL after `graceMs`. When the
 * group leader exits, the group is SIGKILLed unconditionally so no grandchild survives it and the
 * output pipes reach end-of-file.
 *
 * @example
 * ```ts
 * const result = await runChild({
 *   argv: ["deno", "task", "trainer", "train"],
 *   stdoutPath: "phases/baseline/stdout.log",
 *   stderrPath: "phases/baseline/stderr.log",
 *   timeoutMs: 600_000,
 * });
 * if (result.status !== "ok") console.error(`${result.message}\n${result.logTail}`);
 * ```
 */
export async function runChild(spec: ChildSpec): Promise<ChildResult> {
  if (spec.argv.length === 0 || spec.argv[0] === "") {
    throw new TypeError("runChild: argv must name an executable");
  }
  const graceMs = spec.graceMs ?? DEFAULT_GRACE_MS;
  for (const [name, value] of [["timeoutMs", spec.timeoutMs], ["graceMs", graceMs]] as const) {
    if (value !== undefined && (Number.isNaN(value) || value < 0)) {
      throw new RangeError(`runChild: ${name} must be a non-negative number, got ${value}`);
    }
  }
  const tail = new LogTail();
  // The logs are opened and the working directory checked at once: each is a round trip to the
  // filesystem that delays the spawn.
  const cwdFound = spec.cwd === undefined ? Promise.resolve(true) : isDirectory(spec.cwd);
  const [stdoutOpened, stderrOpened] = await Promise.allSettled([
    openLog(spec.stdoutPath),
    openLog(spec.stderrPath),
  ]);
  if (stdoutOpened.status === "rejected" || stderrOpened.status === "rejected") {
    for (const opened of [stdoutOpened, stderrOpened]) {
      if (opened.status === "fulfilled") opened.value.close();
    }
    await cwdFound;
    throw stdoutOpened.status === "rejected"
      ? stdoutOpened.reason
      : (stderrOpened as PromiseRejectedResult).reason;
  }
  const stdoutFile = stdoutOpened.value;
  const stderrFile = stderrOpened.value;
  // Resolved only once the logs are closed, so shutdown() callbacks see complete log files.
  let markDone!: () => void;
  const done = new Promise<void>((resolve) => markDone = resolve);
  try {
    return await supervise(spec, graceMs, tail, stdoutFile, stderrFile, done, cwdFound);
  } finally {
    stdoutFile.close();
    stderrFile.close();
    markDone();
  }
}

async function supervise(
  spec: ChildSpec,
  graceMs: number,
  tail: LogTail,
  stdoutFile: Deno.FsFile,
  stderrFile: Deno.FsFile,
  done: Promise<void>,
  cwdFound: Promise<boolean>,
): Promise<ChildResult> {
  if (!(await cwdFound)) {
    return notStarted("failed", `working directory not found: ${spec.cwd}`);
  }
  // Checked synchronously right before spawn, so a shutdown cannot slip in between.
  const interrupted = getInterruption();
  if (interrupted !== null) {
    return notStarted("interrupted", `not started: harness interrupted by ${interrupted.reason}`);
  }
  if (spec.signal?.aborted) return notStarted("interrupted", "not started: aborted by caller");

  const startedAt = new Date();
  const t0 = performance.now();
  const child = spawnGroupLeader(spec);
  if (typeof child === "string") return notStarted("failed", child);

  const pid = child.pid;
  try {
    spec.onSpawn?.(pid);
  } catch {
    // Recording the pid is best effort; supervision goes on regardless.
  }
  const stop = new GroupStopper(pid);
  const unregister = registerLiveChild({
    pid,
    argv: [...spec.argv],
    startedAt,
    interrupt: (reason, grace) =>
      stop.begin("interrupted", `interrupted by ${reason}`, grace ?? graceMs),
    killNow: () => stop.killNow(),
    done,
  });

  const onAbort = () => stop.begin("interrupted", "interrupted: aborted by caller", graceMs);
  spec.signal?.addEventListener("abort", onAbort, { once: true });
  const cancelTimeout = spec.timeoutMs === undefined ? () => {} : setLongTimeout(
    () => stop.begin("timeout", `timed out after ${seconds(spec.timeoutMs!)} s`, graceMs),
    spec.timeoutMs,
  );

  const emit = lineEmitter(spec.onLine, tail);
  const cap = spec.logCapBytes ?? DEFAULT_LOG_CAP_BYTES;
  const stdoutPump = new Pump(
    child.stdout,
    stdoutFile,
    spec.stdoutPath,
    cap,
    (line) => emit("stdout", line),
  );
  const stderrPump = new Pump(
    child.stderr,
    stderrFile,
    spec.stderrPath,
    cap,
    (line) => emit("stderr", line),
  );
  const pumps = Promise.all([stdoutPump.done, stderrPump.done]);

  let status: Deno.CommandStatus;
  let escapedPipeHolder = false;
  try {
    status = await child.status;
    // The leader is gone; take down whatever it left behind so the pipes can reach EOF.
    stop.killNow();
    escapedPipeHolder = !(await settlesWithin(pumps, DRAIN_LIMIT_MS));
    if (escapedPipeHolder) {
      stdoutPump.cancel();
      stderrPump.cancel();
      await pumps;
    }
  } finally {
    cancelTimeout();
    stop.dispose();
    spec.signal?.removeEventListener("abort", onAbort);
    unregister();
  }
  const wallS = (performance.now() - t0) / 1000;
  const signal = status.signal ?? null;
  const exitCode = signal === null ? status.code : null;

  const { childStatus, message } = outcomeOf(stop, signal, exitCode, [stdoutPump, stderrPump], {
    cap,
    escapedPipeHolder,
  });
  return { status: childStatus, exitCode, signal, wallS, pid, message, logTail: tail.text() };
}

/** The result of a child that never started. */
function notStarted(status: ChildStatus, message: string): ChildResult {
  return { status, exitCode: null, signal: null, wallS: 0, pid: null, message, logTail: "" };
}

/** Starts the child as the leader of its own process group; a message when it cannot start. */
function spawnGroupLeader(spec: ChildSpec): Deno.ChildProcess | string {
  const executable = spec.argv[0];
  try {
    return new Deno.Command(executable, {
      args: spec.argv.slice(1),
      env: spec.env,
      clearEnv: spec.clearEnv ?? false,
      cwd: spec.cwd,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      detached: true, // setsid: the child leads its own process group, so -pid reaches grandchildren
    }).spawn();
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return `executable not found: ${executable}`;
    if (error instanceof Deno.errors.PermissionDenied) {
      return `permission denied executing: ${executable}`;
    }
    return `could not start ${executable}: ${oneLine(errorText(error))}`;
  }
}

/** The child's status and the message that says why, with what happened to its logs. */
function outcomeOf(
  stop: GroupStopper,
  signal: Deno.Signal | null,
  exitCode: number | null,
  pumps: Pump[],
  logs: { cap: number; escapedPipeHolder: boolean },
): { childStatus: ChildStatus; message: string } {
  let childStatus: ChildStatus;
  let message: string;
  if (stop.kind !== null) {
    childStatus = stop.kind;
    message = stop.message +
      (stop.escalated ? ` (SIGKILL after ${seconds(stop.graceMs)} s grace)` : "");
  } else if (signal !== null) {
    childStatus = "failed";
    message = `killed by signal ${signal}`;
  } else if (exitCode !== 0) {
    childStatus = "failed";
    message = `exited with code ${exitCode}`;
  } else {
    childStatus = "ok";
    message = "exited with code 0";
  }
  const writeError = pumps.find((pump) => pump.writeError !== null)?.writeError ?? null;
  if (writeError !== null) message += `; log write failed: ${oneLine(writeError)}`;
  for (const pump of pumps) {
    if (pump.rotations > 0) {
      message += `; ${pump.path} passed ${logs.cap} bytes: older output dropped, ` +
        `the newest kept in ${pump.path}.1 and ${pump.path}`;
    }
  }
  if (logs.escapedPipeHolder) {
    message += "; output abandoned: a process outside the group kept the pipe open";
  }
  return { childStatus, message };
}

/** Sends TERM then KILL to a process group, once, and remembers why. */
class GroupStopper {
  kind: "timeout" | "interrupted" | null = null;
  message = "";
  escalated = false;
  graceMs = 0;
  #cancelKill: () => void = () => {};
  #disposed = false;
  readonly #pid: number;

  constructor(pid: number) {
    this.#pid = pid;
  }

  begin(kind: "timeout" | "interrupted", message: string, graceMs: number): void {
    if (this.kind !== null || this.#disposed) return;
    this.kind = kind;
    this.message = message;
    this.graceMs = graceMs;
    signalGroup(this.#pid, "SIGTERM");
    this.#cancelKill = setLongTimeout(() => {
      this.escalated = true;
      signalGroup(this.#pid, "SIGKILL");
    }, graceMs);
  }

  killNow(): void {
    if (!this.#disposed) signalGroup(this.#pid, "SIGKILL");
  }

  dispose(): void {
    this.#disposed = true;
    this.#cancelKill();
  }
}

function signalGroup(pid: number, signal: Deno.Signal): void {
  try {
    Deno.kill(-pid, signal);
  } catch {
    // ESRCH (group already gone) is the normal case after the leader exits; EPERM cannot be fixed here.
  }
}

/** Copies one output pipe to a log file verbatim and splits it into lines for the callback. */
class Pump {
  readonly done: Promise<void>;
  writeError: string | null = null;
  rotations = 0;
  readonly path: string;
  readonly #cap: number;
  #written = 0;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;

  constructor(
    stream: ReadableStream<Uint8Array>,
    file: Deno.FsFile,
    path: string,
    cap: number,
    onLine: (line: string) => void,
  ) {
    this.path = path;
    this.#cap = cap;
    this.#reader = stream.getReader();
    this.done = this.#run(file, onLine);
  }

  cancel(): void {
    this.#reader.cancel().catch(() => {});
  }

  async #run(file: Deno.FsFile, onLine: (line: string) => void): Promise<void> {
    const decoder = new TextDecoder();
    const splitter = new LineSplitter();
    try {
      while (true) {
        const { value, done } = await this.#reader.read();
        if (done) break;
        await this.#write(file, value);
        for (const line of splitter.push(decoder.decode(value, { stream: true }))) onLine(line);
      }
    } catch {
      // A cancelled or broken pipe ends the stream; what was read so far is kept.
    }
    for (const line of splitter.push(decoder.decode())) onLine(line);
    const last = splitter.flush();
    if (last !== null) onLine(last);
  }

  async #write(file: Deno.FsFile, bytes: Uint8Array): Promise<void> {
    if (this.writeError !== null) return;
    try {
      if (this.#written > 0 && this.#written + bytes.length > this.#cap) {
        // Keep the newest output: the full log becomes <log>.1, the log starts again.
        await Deno.copyFile(this.path, `${this.path}.1`);
        await file.truncate(0);
        this.#written = 0;
        this.rotations++;
      }
      let offset = 0;
      while (offset < bytes.length) offset += await file.write(bytes.subarray(offset));
      this.#written += bytes.length;
    } catch (error) {
      // Keep draining the pipe (a blocked pipe would stall the child) but report the failure.
      this.writeError = errorText(error);
    }
  }
}

function lineEmitter(
  onLine: ChildSpec["onLine"],
  tail: LogTail,
): (stream: OutputStream, line: string) => void {
  let reported = false;
  return (stream, line) => {
    tail.add(line);
    if (onLine === undefined) return;
    try {
      onLine(stream, line);
    } catch (error) {
      // A faulty observer must not break supervision of the child; say so once.
      if (!reported) console.error(`runChild: onLine callback threw: ${errorText(error)}`);
      reported = true;
    }
  };
}

async function openLog(path: string): Promise<Deno.FsFile> {
  const options = { append: true, create: true };
  try {
    return await Deno.open(path, options);
  } catch (error) {
    // Its folder is usually there already: made only when missing, saving a round trip a spawn.
    const slash = path.lastIndexOf("/");
    if (!(error instanceof Deno.errors.NotFound) || slash <= 0) throw error;
    await Deno.mkdir(path.slice(0, slash), { recursive: true });
    return await Deno.open(path, options);
  }
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isDirectory;
  } catch {
    return false;
  }
}

async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), ms));
  try {
    return await Promise.race([promise.then(() => true as const), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** Longest delay setTimeout honours; larger ones (and Infinity) would fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** setTimeout for any delay (Infinity never fires); returns the cancel function. */
function setLongTimeout(fn: () => void, ms: number): () => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = performance.now() + ms;
  const arm = (remaining: number) => {
    if (remaining === Infinity) return;
    timer = setTimeout(() => {
      const left = deadline - performance.now();
      if (left > 0 && remaining > MAX_TIMER_MS) arm(left);
      else fn();
    }, Math.min(remaining, MAX_TIMER_MS));
  };
  arm(ms);
  return () => clearTimeout(timer);
}

function seconds(ms: number): string {
  return String(Math.round(ms / 100) / 10);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, " ").trim();
}
