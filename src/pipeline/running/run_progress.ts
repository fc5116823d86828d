/**
 * What the runner tells the person (or CI log) watching it. The runner talks to this interface
 * only; the terminal rendering (live line on a TTY, plain lines in CI) lives in src/process.
 *
 * @module
 */

import { type PhaseStatus, type Verdict } from "../../types/mod.ts";

/** Stops following a phase. */
export interface Follower {
  /** Stop reporting this phase's progress (after one last read of its metrics). */
  stop(): void | Promise<void>;
}

/** Progress sink of a run. */
export interface Progress {
  /** A run starts. */
  runStart(experiment: string, runDir: string, phases: number): void;
  /** A non-training phase starts. */
  phaseStart(phase: string): Follower;
  /** A training phase starts; progress comes from its metrics file (step k of `stopAt`). */
  followMetrics(phase: string, metricsFile: string, stopAt: number): Follower;
  /** A phase ends. */
  phaseEnd(phase: string, status: PhaseStatus, wallS: number, message?: string): void;
  /** A free-form note. */
  note(text: string): void;
  /** A run ends. */
  runEnd(
    experiment: string,
    verdict: Verdict,
    wallS: number,
    runDir: string,
    card?: RunCard,
  ): void;
}

/** The root-cause card's console form: the lines to show, and the cause for the last line. */
export interface RunCard {
  /** Card lines (findings, next actions, a failed phase's last log lines). */
  lines: string[];
  /** Short cause, e.g. `baseline~resume-native FAIL, first divergent step 21; state check names rng`. */
  cause: string | null;
  /** `name: reason` of every ERROR comparison no card line explains (rounded metrics, NaN). */
  errors: string[];
  /** `name VERDICT (lane): statement` of every calibrated comparison (what a PASS is worth). */
  sensitivity: string[];
  /** Warnings a passing run must still show on the console (a tag nobody asked for). */
  warnings?: string[];
  /** Phases of the run. */
  phases: number;
  /** Of those, reused from the cache. */
  cached: number;
}
