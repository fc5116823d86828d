/**
 * The plan is resolved once per run: `resolvePlan` is called only where a run (or a preview of
 * one) begins — the CLI's `run` and `plan`, a rerun, each bisect — and where an older run folder
 * without `plan.json` is read back. The runner, `--import`, goldens and reports take the plan
 * and place it (`placePlan`); none of them resolves the experiment again.
 */

import assert from "node:assert/strict";
import { harnessModules, isTestCode } from "./_testing/source_tree.ts";

/** Each module that may call resolvePlan, with how many calls and why. */
const CALL_SITES: Record<string, number> = {
  "cli/run_command.ts": 1, // parity run: one per experiment, placed by the runner (and --import)
  "cli/plan_command.ts": 2, // parity plan: the preview, or the offline bundle (one of the two)
  "reproduce/rerun.ts": 1, // the rerun is a new run, resolved in the rerunning environment
  "reproduce/bisect.ts": 1, // once per bisect: every tested commit runs the same plan
  "reproduce/package_bisect.ts": 1, // each release is its own experiment (its release argument)
  "reproduce/stored_run.ts": 1, // a run folder from before plan.json
};

Deno.test("resolvePlan is called once per run, only where a run begins", async () => {
  const calls: Record<string, number> = {};
  for await (const { rel, text } of harnessModules()) {
    if (isTestCode(rel) || rel === "experiment/plan/resolve_plan.ts") continue;
    const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
    const n = [...code.matchAll(/\bresolvePlan\(/g)].length;
    if (n > 0) calls[rel] = n;
  }
  assert.deepEqual(calls, CALL_SITES);
});
