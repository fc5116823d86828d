/** Test helpers of the executors: a resolved phase and a context that records what it is told. */

import { join } from "node:path";
import type { ExecutorSpec, PhaseSpec } from "../types/phase_spec.ts";
import type { ExecutionContext } from "./executor.ts";

/** A baseline phase running `argv` with its folder at `dir/phases/baseline`. */
export function phaseFixture(dir: string, argv: string[], executor: ExecutorSpec): PhaseSpec {
  const phaseDir = join(dir, "phases", "baseline");
  return {
    name: "baseline",
    role: "baseline",
    tool: "trainer",
    consumes: [],
    stopAt: 4,
    args: {},
    topology: {},
    topologyKey: "{}",
    argv,
    env: { PARITY_TEST: "1" },
    cwd: dir,
    timeoutS: 60,
    keyed: { argv, env: {} },
    paths: { dir: phaseDir, metricsFile: join(phaseDir, "metrics.jsonl") },
    codeInputs: [],
    executor,
  };
}

/** A context whose notes and JSON writes land in arrays. */
export function recordingContext(launchRecord: Record<string, unknown> = {}): ExecutionContext & {
  notes: string[];
  written: Map<string, unknown>;
} {
  const notes: string[] = [];
  const written = new Map<string, unknown>();
  return {
    launchRecord,
    notes,
    written,
    writeJson: async (path, value) => {
      written.set(path, value);
      await Deno.writeTextFile(path, JSON.stringify(value));
    },
    note: (message) => notes.push(message),
    started: () => {},
  };
}
