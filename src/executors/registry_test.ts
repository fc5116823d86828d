import assert from "node:assert/strict";
import { executorFor, LAUNCH_RECORD_FILES } from "./registry.ts";

Deno.test("executorFor: each kind gets its executor; only Slurm's work outlives the harness", () => {
  assert.equal(executorFor({ kind: "local" }).reattach, undefined);
  const slurm = executorFor({ kind: "slurm", extraArgs: [], pollS: 1, srun: false, maxJobs: 1 });
  assert.ok(slurm.reattach);
});

Deno.test("LAUNCH_RECORD_FILES: the record of every executor whose work outlives the harness", () => {
  assert.deepEqual(LAUNCH_RECORD_FILES, ["slurm_job.json"]);
});
