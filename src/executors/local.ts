/**
 * The local executor: a phase as a supervised child process of the harness (src/process), in
 * its own process group, its pid recorded in the phase folder so a later harness can reap the
 * group should this one die without stopping it.
 *
 * @module
 */

import { join } from "node:path";
import { runChild } from "../process/mod.ts";
import type { LocalExecutorSpec, PhaseSpec } from "../types/mod.ts";
import {
  type ExecutionContext,
  type ExecutionResult,
  type Executor,
  type ExecutorRegistration,
  phaseLogs,
} from "./executor.ts";

/** Files the local executor keeps in a phase folder. */
export const LOCAL_FILES = {
  /** The child's pid (also its process group id), written right after the spawn. */
  pid: "child.pid",
} as const;

/** The local executor (it has no settings). */
export function localExecutor(_settings: LocalExecutorSpec): Executor {
  return { run: runLocal };
}

/** The local executor's registration (`registry.ts`). */
export const LOCAL_EXECUTOR: ExecutorRegistration<LocalExecutorSpec> = { create: localExecutor };

async function runLocal(phase: PhaseSpec, ctx: ExecutionContext): Promise<ExecutionResult> {
  const result = await runChild({
    argv: phase.argv,
    env: phase.env,
    cwd: phase.cwd,
    timeoutMs: phase.timeoutS * 1000,
    ...phaseLogs(phase),
    // Lets a later run reap this group if the harness dies without stopping it.
    onSpawn: (pid) => {
      try {
        Deno.writeTextFileSync(join(phase.paths.dir, LOCAL_FILES.pid), `${pid}\n`);
      } finally {
        ctx.started();
      }
    },
  });
  const { status, exitCode, signal, wallS, message, logTail } = result;
  // A local child's failures are its own: nothing here is flaky infrastructure.
  return { status, exitCode, signal, wallS, message, logTail, infra: false };
}
