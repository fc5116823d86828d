/**
 * The one place a phase's `executor.kind` becomes an {@linkcode Executor}. Registering an
 * executor is one line in {@linkcode EXECUTORS}; the mapped type makes a missing line a compile
 * error as soon as `ExecutorSpec` (src/types/phase_spec.ts) has its member. What else a new
 * executor touches is listed in `executor.ts`.
 *
 * @module
 */

import type { ExecutorSpec } from "../types/mod.ts";
import type { Executor, ExecutorRegistration } from "./executor.ts";
import { LOCAL_EXECUTOR } from "./local.ts";
import { SLURM_EXECUTOR } from "./slurm.ts";

type Registry = {
  [K in ExecutorSpec["kind"]]: ExecutorRegistration<Extract<ExecutorSpec, { kind: K }>>;
};

const EXECUTORS: Registry = {
  local: LOCAL_EXECUTOR,
  slurm: SLURM_EXECUTOR,
};

/** The executor a phase's resolved settings name. */
export function executorFor(settings: ExecutorSpec): Executor {
  // Each registration takes its own member of the union; `kind` picked it, which TypeScript
  // cannot correlate through the index.
  const entry = EXECUTORS[settings.kind] as ExecutorRegistration<ExecutorSpec>;
  return entry.create(settings);
}

/**
 * Launch record files of every executor whose work outlives the harness: a phase folder holding
 * one belongs to work a later run re-attaches to.
 */
export const LAUNCH_RECORD_FILES: readonly string[] = Object.values(EXECUTORS)
  .flatMap((entry: ExecutorRegistration<never>) =>
    entry.launchRecordFile ? [entry.launchRecordFile] : []
  );
