import assert from "node:assert/strict";
import { executorFor } from "./registry.ts";

Deno.test("executorFor: each kind gets its executor; only Slurm's work outlives the harness", () => {
  assert.equal(executorFor({ kind: "local" }).reattach, undefined);
  const slurm = executorFor({ kind: "slurm", extraArgs: [], pollS: 1, srun: false, maxJobs: 1 });
  assert.ok(slurm.reattach);
});
