/**
 * Stopping every supervised child when the harness itself is asked to stop (SIGINT, SIGTERM,
 * SIGHUP), so nothing outlives the harness and the run can be recorded as interrupted.
 *
 * Children started by {@linkcode runChild} live in their own sessions, so a Ctrl-C or a `kill` aimed
 * at the harness does not reach them: the harness must forward it. {@linkcode installSignalHandlers}
 * does that. OS signal listeners keep Deno's event loop alive, so they are attached only while at
 * least one child is running (unless `listenWhileIdle`), and the process can end normally otherwise.
 *
 * @module
 */

import {
  clearInterruption,
  getInterruption,
  type Interruption,
  killAllLiveNow,
  liveControls,
  onLiveCountChange,
  setInterruption,
} from "./_live_children.ts";

export type { Interruption } from "./_live_children.ts";

/** The third SIGINT/SIGTERM/SIGHUP received exits the harness at once (children SIGKILLed first). */
export const FORCE_EXIT_AFTER_SIGNALS = 3;

/** Signals the harness forwards to its children by default. */
export const HANDLED_SIGNALS: readonly Deno.Signal[] = ["SIGINT", "SIGTERM", "SIGHUP"];

/** Options of {@linkcode installSignalHandlers}. */
export interface SignalHandlerOptions {
  /**
   * Called once after every live child has been stopped and its result delivered, with the reason
   * and the exit code to use. Record the run as interrupted here, then `Deno.exit(i.exitCode)`
   * when you are done (this module never exits by itself).
   */
  onInterrupt?: (interruption: Interruption) => void | Promise<void>;
  /** TERM→KILL grace for children stopped by a signal (default: each child's own `graceMs`). */
  graceMs?: number;
  /** Signals to handle (default {@linkcode HANDLED_SIGNALS}). */
  signals?: readonly Deno.Signal[];
  /**
   * Keep the OS listeners attached between children too, so a signal between two phases is also
   * recorded. The process then cannot end until the returned uninstall function is called.
   */
  listenWhileIdle?: boolean;
}

/** Live child as reported by {@linkcode liveChildren}. */
export interface LiveChildInfo {
  /** Process id, equal to the child's process group id. */
  pid: number;
  /** The argv it was started with. */
  argv: readonly string[];
  /** When it was spawned. */
  startedAt: Date;
}

/** Options of {@linkcode shutdown}. */
export interface ShutdownOptions {
  /** TERM→KILL grace (default: the installed handlers' `graceMs`, else each child's own). */
  graceMs?: number;
  /** Exit code to record (default {@linkcode exitCodeForSignal}`(reason)`). */
  exitCode?: number;
}

let installed: SignalHandlerOptions | null = null;
let attachedSignals: Deno.Signal[] = [];
let stopWatchingCount: (() => void) | null = null;
let pendingShutdown: Promise<Interruption> | null = null;

/**
 * Exit code conventionally used after a fatal signal: 128 + its number (SIGINT 130, SIGTERM 143,
 * SIGHUP 129). Any other reason gives 130.
 */
export function exitCodeForSignal(reason: string): number {
  switch (reason) {
    case "SIGHUP":
      return 129;
    case "SIGTERM":
      return 143;
    case "SIGQUIT":
      return 131;
    default:
      return 130;
  }
}

/**
 * Forward SIGINT/SIGTERM/SIGHUP to every live child group (TERM, then KILL after the grace
 * period) and report the interruption through `onInterrupt`. Children stopped this way resolve
 * with status `"interrupted"`, and later {@linkcode runChild} calls return `"interrupted"` without
 * spawning. A second signal during the shutdown SIGKILLs every group at once; a third one also
 * exits the harness immediately (see {@linkcode FORCE_EXIT_AFTER_SIGNALS}).
 *
 * Returns a function that uninstalls the handlers. Calling it again replaces the options.
 *
 * @example
 * ```ts
 * const uninstall = installSignalHandlers({
 *   onInterrupt: async (i) => {
 *     await markRunInterrupted(runDir, i.reason);
 *     Deno.exit(i.exitCode);
 *   },
 * });
 * try { await runAllPhases(); } finally { uninstall(); }
 * ```
 */
export function installSignalHandlers(options: SignalHandlerOptions = {}): () => void {
  detachListeners();
  stopWatchingCount?.();
  installed = options;
  signalsReceived = 0;
  const sync = (size: number) =>
    (options.listenWhileIdle || size > 0) ? attachListeners() : detachListeners();
  stopWatchingCount = onLiveCountChange(sync);
  sync(liveControls().length);
  const self = stopWatchingCount;
  return () => {
    if (stopWatchingCount !== self) return; // a later install replaced this one
    stopWatchingCount();
    stopWatchingCount = null;
    detachListeners();
    installed = null;
  };
}

/**
 * Stop every live child (TERM, then KILL after the grace period), wait until each has exited and
 * its `runChild` result is delivered, then call the installed `onInterrupt`. The interruption is
 * sticky: later `runChild` calls return `"interrupted"` without spawning. Calling it again while a
 * shutdown is in progress SIGKILLs every group at once and returns the same promise.
 */
export function shutdown(reason: string, options: ShutdownOptions = {}): Promise<Interruption> {
  if (pendingShutdown !== null) {
    killAllLiveNow();
    return pendingShutdown;
  }
  const interruption: Interruption = {
    reason,
    exitCode: options.exitCode ?? exitCodeForSignal(reason),
    at: new Date(),
  };
  setInterruption(interruption);
  const recorded = getInterruption()!;
  const graceMs = options.graceMs ?? installed?.graceMs;
  const onInterrupt = installed?.onInterrupt;
  pendingShutdown = (async () => {
    const children = liveControls();
    for (const child of children) child.interrupt(reason, graceMs);
    await Promise.all(children.map((child) => child.done));
    if (onInterrupt !== undefined) {
      try {
        await onInterrupt(recorded);
      } catch (error) {
        console.error(`onInterrupt failed: ${error instanceof Error ? error.message : error}`);
      }
    }
    return recorded;
  })();
  return pendingShutdown;
}

/** The recorded interruption (reason and exit code), or `null` if the run was not interrupted. */
export function interruption(): Interruption | null {
  return getInterruption();
}

/**
 * Forget a recorded interruption so children may be started again. Only for tests and for hosts
 * that run several independent sessions in one process; waits for a shutdown in progress first.
 */
export async function resetInterruption(): Promise<void> {
  if (pendingShutdown !== null) await pendingShutdown;
  pendingShutdown = null;
  clearInterruption();
}

/** The children that are running right now. */
export function liveChildren(): LiveChildInfo[] {
  return liveControls().map(({ pid, argv, startedAt }) => ({ pid, argv, startedAt }));
}

/** Signals received since the handlers were installed; the third one forces an exit. */
let signalsReceived = 0;

function onSignal(signal: Deno.Signal): void {
  signalsReceived++;
  if (signalsReceived >= FORCE_EXIT_AFTER_SIGNALS) {
    // The caller seems stuck (e.g. in onInterrupt): never leave the user unable to stop it.
    killAllLiveNow();
    Deno.exit(getInterruption()?.exitCode ?? exitCodeForSignal(signal));
  }
  void shutdown(signal);
}

const listeners = new Map<Deno.Signal, () => void>();

function attachListeners(): void {
  if (installed === null || attachedSignals.length > 0) return;
  for (const signal of installed.signals ?? HANDLED_SIGNALS) {
    const listener = listeners.get(signal) ?? (() => onSignal(signal));
    listeners.set(signal, listener);
    try {
      Deno.addSignalListener(signal, listener);
      attachedSignals.push(signal);
    } catch {
      // Not every platform supports every signal (SIGHUP on Windows); skip those.
    }
  }
}

function detachListeners(): void {
  for (const signal of attachedSignals) {
    Deno.removeSignalListener(signal, listeners.get(signal)!);
  }
  attachedSignals = [];
}
