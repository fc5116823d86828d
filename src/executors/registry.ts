/**
 * The one place a phase's `executor.kind` becomes an {@linkcode Executor}. Registering an
 * executor is one line here; the mapped type makes a missing line a compile error as soon as
 * `ExecutorSpec` (src/types/phase_spec.ts) has its member. What else a new executor touches is
 * listed in `executor.ts`.
 *
 * @module
 */

import type { ExecutorSpec } from "../types/phase_spec.ts";
import type { Executor } from "./executor.ts";
import { localExecutor } from "./local.ts";
import { slurmExecutor } from "./slurm.ts";

type Factories = {
  [K in ExecutorSpec["kind"]]: (settings: Extract<ExecutorSpec, { kind: K }>) => Executor;
};

const EXECUTORS: Factories = {
  local: localExecutor,
  slurm: slurmExecutor,
};

/** The executor a phase's resolved settings name. */
export function executorFor(settings: ExecutorSpec): Executor {
  // Each factory takes its own member of the union; `kind` picked it, which TypeScript cannot
  // correlate through the index.
  const make = EXECUTORS[settings.kind] as (settings: ExecutorSpec) => Executor;
  return make(settings);
}
