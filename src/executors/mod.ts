/**
 * Where a phase runs: the `Executor` interface, the local child and the Slurm job (batch script,
 * sbatch/scontrol/scancel, state mapping, job following), and the registry that maps an
 * experiment's `executor.kind` to one.
 *
 * @module
 */

export {
  type ExecutionContext,
  type ExecutionResult,
  phaseLogs,
  type SlurmJobDetails,
} from "./executor.ts";
export { LOCAL_FILES } from "./local.ts";
export { executorFor, LAUNCH_RECORD_FILES } from "./registry.ts";
export { schedulerVersion } from "./slurm_cli.ts";
