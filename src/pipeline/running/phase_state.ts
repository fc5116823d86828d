/**
 * The state of a run's phases as the runner and the executors' pipeline side share it: where each
 * phase stands, and what every phase of the run shares. Its own module so the phase launcher and
 * the executor glue (`slurm_phase.ts`) both use it without importing each other.
 *
 * @module
 */

import type { MetricSeries } from "../../metrics/mod.ts";
import type {
  PhaseDevices,
  PhaseSpec,
  PhaseStatus,
  PhaseSummary,
  PlanSyncSummary,
} from "../../types/mod.ts";
import type { CheckpointVerifyMode, Manifest } from "../store/mod.ts";
import type { LaunchGate } from "./launch_gate.ts";
import type { Progress } from "./run_progress.ts";

/** Where a phase stands during a run. */
export interface PhaseState {
  /** Its resolved spec. */
  spec: PhaseSpec;
  /** Progress through the run. */
  status: PhaseStatus | "pending" | "running";
  /** Cache key, computed before anything runs. */
  key: string;
  /** Must run even when a cached result exists (`--force`). */
  forced: boolean;
  /** Ran or was reused, so its folder holds its outputs. */
  present: boolean;
  /** The pool's devices it holds while it runs (`devices:`). */
  devices?: PhaseDevices;
  /** The summary entry, once ended. */
  summary?: PhaseSummary;
  /** Plan phases: the verifier's summary. */
  plan?: PlanSyncSummary;
  /**
   * A launched phase: writing its completion marker (checkpoint and output hashes, phase.json),
   * which goes on while the next phase runs. The run awaits it before publishing.
   */
  completion?: Promise<void>;
  /** A launched phase's metrics, read while the next phases run (the judge reads them then). */
  metrics?: Promise<MetricSeries>;
}

/** What every phase of one run shares. */
export interface PhaseContext {
  /** `<results>/<experiment>`: where earlier runs are looked up. */
  experimentDir: string;
  /** This run's folder. */
  runDir: string;
  /**
   * The experiment's earlier run folders, oldest first, listed once: the experiment's lock keeps
   * any other harness from adding one during the run.
   */
  earlierRuns: readonly string[];
  /**
   * Run folders of the other experiments in the same results folder, oldest first: a phase
   * with no earlier result of its own is reused from one of them when its cache key (its
   * inputs, by content) is equal. Empty with `--import`.
   */
  suiteRuns: readonly string[];
  /** Folder relative code inputs resolve against. */
  baseDir: string;
  /** Environment for `$NAME` in `!command` code inputs. */
  harnessEnv: Record<string, string>;
  /** The run's manifest (children are recorded as they launch). */
  manifest: Manifest;
  /** Where it is written. */
  manifestPath: string;
  /** Progress sink. */
  progress: Progress;
  /** Every phase's state by name. */
  states: Map<string, PhaseState>;
  /** How reused checkpoints are checked (`full` with `--verify-checkpoints`). */
  verifyCheckpoints: CheckpointVerifyMode;
  /** Launches on their way to a running child: work that can wait waits for them. */
  gate: LaunchGate;
  /** `--no-launch` / `--import`: nothing launches; earlier failures with the same key are judged. */
  noLaunch?: boolean;
}

/** What the scheduler hears from one launch besides its end. */
export interface LaunchHooks {
  /** Its work runs (or will not start): the harness may do work that can wait. */
  started(): void;
  /**
   * Its child ended ok and only a check of its output is left (a plan's verification): its slot
   * may go to the next independent phase meanwhile; its dependants still wait for its status.
   */
  released(): void;
}
