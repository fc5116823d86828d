/**
 * Process-wide state shared by {@linkcode runChild} and the signal handling: the set of live child
 * process groups and whether the harness has been interrupted.
 *
 * @module
 */

/** Why and how the harness was interrupted. */
export interface Interruption {
  /** What stopped the run: a signal name (`"SIGINT"`, `"SIGTERM"`, `"SIGHUP"`) or a caller's reason. */
  reason: string;
  /** Exit code the harness should end with (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP). */
  exitCode: number;
  /** When the interruption began. */
  at: Date;
}

/** What the registry needs to stop one live child group. */
export interface LiveChildControl {
  /** Process id of the group leader (also the process group id). */
  pid: number;
  /** The child's argv, for diagnostics. */
  argv: readonly string[];
  /** When the child was spawned. */
  startedAt: Date;
  /** TERM the group now, KILL it after `graceMs` (or the child's own grace when undefined). */
  interrupt(reason: string, graceMs: number | undefined): void;
  /** SIGKILL the group at once. Must be synchronous (it also runs from the `unload` event). */
  killNow(): void;
  /** Resolves when the child has exited, its pipes are drained and its log files are closed. */
  done: Promise<void>;
}

const live = new Set<LiveChildControl>();
const sizeListeners = new Set<(size: number) => void>();
let current: Interruption | null = null;
let unloadHookInstalled = false;

/** The current interruption, or `null` while the run has not been interrupted. */
export function getInterruption(): Interruption | null {
  return current;
}

/** Record an interruption; returns `false` (and changes nothing) if one is already recorded. */
export function setInterruption(value: Interruption): boolean {
  if (current !== null) return false;
  current = value;
  return true;
}

/** Forget the recorded interruption (tests; hosts that run several sessions in one process). */
export function clearInterruption(): void {
  current = null;
}

/** Snapshot of the live children. */
export function liveControls(): LiveChildControl[] {
  return [...live];
}

/** Subscribe to changes of the number of live children; returns an unsubscribe function. */
export function onLiveCountChange(listener: (size: number) => void): () => void {
  sizeListeners.add(listener);
  return () => sizeListeners.delete(listener);
}

/** Add a live child; returns the function that removes it again. */
export function registerLiveChild(control: LiveChildControl): () => void {
  installUnloadHook();
  live.add(control);
  notify();
  return () => {
    if (live.delete(control)) notify();
  };
}

/** SIGKILL every live child group immediately (synchronous; safe inside `unload`). */
export function killAllLiveNow(): void {
  for (const control of live) control.killNow();
}

function notify(): void {
  for (const listener of sizeListeners) listener(live.size);
}

// Deno fires `unload` on Deno.exit() and on a normal end of the event loop: whatever is still
// running then would otherwise be orphaned in its own session.
function installUnloadHook(): void {
  if (unloadHookInstalled) return;
  unloadHookInstalled = true;
  globalThis.addEventListener("unload", killAllLiveNow);
}
