/**
 * Progress display for running phases, written to stderr. On a terminal one live line is
 * rewritten in place (`[phase 3/7] resume-native  step 27/40  ETA 4.0 s`); elsewhere (CI logs) at
 * most one line per phase when it ends (`phase resume-native ok in 3.2 s`) plus one per 10% of its
 * steps, and those only once the phase has run 2 s: a half-second phase prints one line.
 *
 * @module
 */

import { duration } from "../format/mod.ts";

/** Options of {@linkcode ProgressReporter}. */
export interface ProgressOptions {
  /** Rewrite one live line (terminal) instead of printing plain lines. Default: `Deno.stderr.isTerminal()`. */
  tty?: boolean;
  /** Where text goes. Default: synchronous writes to stderr. */
  write?: (text: string) => void;
  /** Clock in milliseconds. Default: `performance.now`. */
  now?: () => number;
  /** Off a terminal: how long a phase runs before its progress lines start (default 2000 ms). */
  minIntervalMs?: number;
  /** Off a terminal: print a progress line whenever another `percentStep`% of the steps is done (default 10). */
  percentStep?: number;
  /** On a terminal: width to cut the live line to. Default: the terminal's width. */
  columns?: number;
}

/** Describes a phase when it starts. */
export interface PhaseInfo {
  /** Phase name, e.g. `resume-native`. */
  name: string;
  /** 1-based position among the run's phases. */
  index: number;
  /** Number of phases in the run. */
  total: number;
  /** Last step the phase runs to (the `n` of `step k/n`), when known. */
  steps?: number;
}

/** Handle for one running phase, returned by {@linkcode ProgressReporter.startPhase}. */
export interface PhaseProgress {
  /** Report that the phase reached optimizer step `step` (smaller or repeated values are ignored). */
  step(step: number): void;
  /** Report the end of the phase: prints `phase <name> <status> in <duration>` (wall time measured unless given). */
  end(status: string, wallS?: number): void;
}

const CLEAR_LINE = "\r\x1b[2K";
/** Terminal redraws closer together than this are skipped (the next update redraws anyway). */
const TTY_REDRAW_MS = 100;

interface ActivePhase {
  info: PhaseInfo;
  startedAt: number;
  firstStep: number | null;
  firstStepAt: number;
  step: number | null;
  stepAt: number;
  lastBucket: number;
}

/**
 * Shows phase progress on stderr. Several phases may be active at once (parallel phases share the
 * live line). Never throws from a progress update.
 *
 * @example
 * ```ts
 * const progress = new ProgressReporter();
 * const phase = progress.startPhase({ name: "baseline", index: 1, total: 7, steps: 40 });
 * phase.step(12);
 * phase.end("ok");
 * progress.close();
 * ```
 */
export class ProgressReporter {
  readonly #tty: boolean;
  readonly #write: (text: string) => void;
  readonly #now: () => number;
  readonly #minIntervalMs: number;
  readonly #percentStep: number;
  readonly #columns: number | undefined;
  readonly #active = new Set<ActivePhase>();
  #liveShown = false;
  #lastRedrawAt = -Infinity;

  /** Create a reporter; see {@linkcode ProgressOptions} for the defaults. */
  constructor(options: ProgressOptions = {}) {
    this.#tty = options.tty ?? Deno.stderr.isTerminal();
    this.#write = options.write ?? writeToStderr;
    this.#now = options.now ?? (() => performance.now());
    this.#minIntervalMs = options.minIntervalMs ?? 2000;
    this.#percentStep = options.percentStep ?? 10;
    this.#columns = options.columns;
  }

  /** Whether the reporter rewrites a live line (terminal mode). */
  get isTty(): boolean {
    return this.#tty;
  }

  /** Start showing a phase; returns the handle to report its steps and its end. */
  startPhase(info: PhaseInfo): PhaseProgress {
    const now = this.#now();
    const phase: ActivePhase = {
      info: { ...info },
      startedAt: now,
      firstStep: null,
      firstStepAt: now,
      step: null,
      stepAt: now,
      lastBucket: -1,
    };
    this.#active.add(phase);
    // Off a terminal the end line is the phase's one line; progress lines come only if it runs long.
    if (this.#tty) this.#redraw(true);
    let ended = false;
    return {
      step: (step) => {
        if (!ended) this.#onStep(phase, step);
      },
      end: (status, wallS) => {
        if (ended) return;
        ended = true;
        this.#active.delete(phase);
        const seconds = wallS ?? (this.#now() - phase.startedAt) / 1000;
        this.#printAbove(`phase ${info.name} ${status} in ${duration(seconds)}`);
      },
    };
  }

  /** Print a whole line (on a terminal, above the live line). */
  note(line: string): void {
    this.#printAbove(line);
  }

  /** Remove the live line (call before exiting or printing a final report). */
  close(): void {
    if (this.#liveShown) this.#safeWrite(CLEAR_LINE);
    this.#liveShown = false;
  }

  #onStep(phase: ActivePhase, step: number): void {
    if (!Number.isFinite(step) || (phase.step !== null && step <= phase.step)) return;
    const now = this.#now();
    if (phase.firstStep === null) {
      phase.firstStep = step;
      phase.firstStepAt = now;
    }
    phase.step = step;
    phase.stepAt = now;
    if (this.#tty) {
      this.#redraw(step === phase.info.steps);
      return;
    }
    const bucket = this.#bucket(phase, step);
    if (bucket > phase.lastBucket && now - phase.startedAt >= this.#minIntervalMs) {
      phase.lastBucket = bucket;
      this.#emit(describe(phase));
    }
  }

  #bucket(phase: ActivePhase, step: number): number {
    const steps = phase.info.steps;
    if (steps === undefined || steps <= 0) return -1;
    return Math.floor((Math.min(step, steps) / steps) * 100 / this.#percentStep);
  }

  #printAbove(line: string): void {
    if (!this.#tty) {
      this.#emit(line);
      return;
    }
    this.#safeWrite((this.#liveShown ? CLEAR_LINE : "") + line + "\n");
    this.#liveShown = false;
    this.#redraw(true);
  }

  #redraw(force: boolean): void {
    const now = this.#now();
    if (!force && now - this.#lastRedrawAt < TTY_REDRAW_MS) return;
    this.#lastRedrawAt = now;
    if (this.#active.size === 0) {
      this.close();
      return;
    }
    const line = [...this.#active].map(describe).join("  |  ");
    this.#safeWrite(CLEAR_LINE + fit(line, this.#columns ?? terminalColumns()));
    this.#liveShown = true;
  }

  #emit(line: string): void {
    this.#safeWrite(line + "\n");
  }

  #safeWrite(text: string): void {
    try {
      this.#write(text);
    } catch {
      // Progress is cosmetic: a closed or broken stderr must not fail the run.
    }
  }
}

/** `[phase 3/7] resume-native  step 27/40  ETA 4.0 s` (parts omitted while unknown). */
function describe(phase: ActivePhase): string {
  const { name, index, total, steps } = phase.info;
  let text = `[phase ${index}/${total}] ${name}`;
  if (phase.step === null) return text;
  text += `  step ${phase.step}${steps === undefined ? "" : `/${steps}`}`;
  const eta = etaSeconds(phase);
  if (eta !== null) text += `  ETA ${duration(eta)}`;
  return text;
}

/** Remaining seconds from the step rate observed since the first step seen, or `null` if unknown. */
function etaSeconds(phase: ActivePhase): number | null {
  const steps = phase.info.steps;
  if (steps === undefined || phase.step === null || phase.firstStep === null) return null;
  if (phase.step >= steps) return 0;
  const done = phase.step - phase.firstStep;
  const elapsedMs = phase.stepAt - phase.firstStepAt;
  if (done <= 0 || elapsedMs <= 0) return null;
  return ((steps - phase.step) * elapsedMs) / done / 1000;
}

function fit(line: string, columns: number | undefined): string {
  if (columns === undefined || columns <= 1 || line.length < columns) return line;
  return line.slice(0, columns - 2) + "…";
}

function terminalColumns(): number | undefined {
  try {
    return Deno.consoleSize().columns;
  } catch {
    return undefined;
  }
}

const encoder = new TextEncoder();

function writeToStderr(text: string): void {
  const bytes = encoder.encode(text);
  let offset = 0;
  while (offset < bytes.length) offset += Deno.stderr.writeSync(bytes.subarray(offset));
}
