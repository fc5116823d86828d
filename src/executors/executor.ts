/**
 * The executor contract: what runs one attempt of a phase somewhere (a local child process, a
 * Slurm batch job) and the one result every executor returns. The pipeline never asks which
 * executor ran a phase: it looks the phase's `executor.kind` up in `registry.ts`, calls
 * {@linkcode Executor.run}, and reads the shared fields of {@linkcode ExecutionResult}; an
 * executor's own details travel in its typed optional part (`slurm`).
 *
 * A new executor touches:
 * 1. `src/types/phase_spec.ts`: its resolved settings, a member of `ExecutorSpec` with its own
 *    `kind`;
 * 2. `src/experiment/schema.ts` (its member of `ExecutorSchema`, what the file may say) and
 *    `resolveExecutor` in `src/experiment/plan/resolve_plan.ts` (that input → its settings);
 * 3. `src/executors/<kind>.ts`: one file exporting its {@linkcode ExecutorRegistration} (a factory
 *    `(settings) => Executor`, and the launch record file if its work outlives the harness);
 * 4. `src/executors/registry.ts`: one registration line (the compiler asks for it once the
 *    `ExecutorSpec` member exists).
 *
 * Its user-facing keys are documented in docs/experiment-files.md (`executor`). Nothing in
 * `src/pipeline/` changes: retries (`infra`), `phase.json`, the console, the stray-folder sweep
 * and re-attaching to work an earlier harness left running all go through this interface. The
 * one part still named for its executor is the `slurm` part of a result (the manifest's
 * `clusters`, `phase.json`'s `slurm`): a new executor with details of its own adds its part.
 *
 * @module
 */

import { join } from "node:path";
import type { ChildStatus } from "../process/mod.ts";
import type { PhaseSpec } from "../types/mod.ts";

/** What the pipeline hands an executor besides the phase (dependency inversion: no pipeline import). */
export interface ExecutionContext {
  /**
   * What a later harness needs to complete the phase from its folder should this one die while
   * the work goes on (cache key, consumed phases, outputs). An executor whose work outlives the
   * harness stores it with its launch handle; the others ignore it.
   */
  launchRecord: Record<string, unknown>;
  /** Writes a JSON file atomically, secrets redacted (the pipeline's writer). */
  writeJson(path: string, value: unknown): Promise<void>;
  /** One line for the console (a submission, a requeue). */
  note(message: string): void;
  /**
   * Called once the work is running (the child spawned, the job submitted): the pipeline does its
   * bookkeeping then, so none of it delays the launch. Never called for work that did not start.
   */
  started(): void;
}

/** A Slurm job as last seen: the `slurm` part of a result (and of `phase.json`). */
export interface SlurmJobDetails {
  /** Job id (null when the submission failed). */
  id: string | null;
  /** Slurm job state (`COMPLETED`, `NODE_FAIL`...). */
  state: string;
  /** Slurm's reason for the state. */
  reason: string;
  /** Nodes it ran on. */
  nodes: string;
  /** Its partition. */
  partition: string;
  /** Times Slurm requeued it. */
  restarts: number;
}

/** How one attempt of a phase ended, whichever executor ran it. Never an exception for job problems. */
export interface ExecutionResult {
  /** `ok`, `failed`, `timeout` or `interrupted`. */
  status: ChildStatus;
  /** The command's exit code when known. */
  exitCode: number | null;
  /** Signal that killed the command (local children), else null. */
  signal: string | null;
  /** Seconds from launch (or attachment) until the work ended. */
  wallS: number;
  /** One line saying why. */
  message: string;
  /** Last lines of the phase's output (for the retry policy and the report). */
  logTail: string;
  /** Flaky infrastructure (node failure, preemption): retried while attempts remain, whatever the log says. */
  infra: boolean;
  /** Slurm phases: the job. */
  slurm?: SlurmJobDetails;
}

/** Work an earlier harness launched and did not see end, as its launch record says. */
export interface EarlierLaunch {
  /** Handle of the work (a Slurm job id). */
  handle: string;
  /** The {@linkcode ExecutionContext.launchRecord} it was launched with. */
  record: Record<string, unknown>;
}

/** Executors whose work outlives the harness (batch jobs): how a later harness picks it up. */
export interface Reattach {
  /** The launch an earlier harness recorded in phase folder `dir`, if any. */
  find(dir: string): Promise<EarlierLaunch | undefined>;
  /** Follows it to its end, as {@linkcode Executor.run} would have. */
  attach(phase: PhaseSpec, launch: EarlierLaunch, ctx: ExecutionContext): Promise<ExecutionResult>;
  /** Stops it when still active; whether it was. */
  cancel(launch: EarlierLaunch): Promise<boolean>;
}

/** Runs attempts of phases in one place; built by a factory in `registry.ts` from a phase's settings. */
export interface Executor {
  /** Runs one attempt of `phase` (its argv, env, cwd and timeout), logs in its folder. */
  run(phase: PhaseSpec, ctx: ExecutionContext): Promise<ExecutionResult>;
  /** Present when the work outlives the harness. */
  reattach?: Reattach;
}

/** The phase logs every executor appends the work's stdout and stderr to. */
export function phaseLogs(phase: PhaseSpec): { stdoutPath: string; stderrPath: string } {
  return {
    stdoutPath: join(phase.paths.dir, "stdout.log"),
    stderrPath: join(phase.paths.dir, "stderr.log"),
  };
}

/** What `registry.ts` registers for one executor kind. */
export interface ExecutorRegistration<S> {
  /** Builds the executor for a phase's resolved settings. */
  create(settings: S): Executor;
  /**
   * Executors with a {@linkcode Executor.reattach}: the file their launch record leaves in a phase
   * folder. An incomplete folder holding one waits for re-attachment instead of being moved aside.
   */
  launchRecordFile?: string;
}
