import assert from "node:assert/strict";
import { infraRetry } from "./slurm_phase.ts";

Deno.test("infraRetry: node failure and preemption are retried while attempts remain", () => {
  const retry = { attempts: 2, on: ["NCCL timeout"] };
  const job = (state: string, infra: boolean) => ({
    infra,
    slurm: { id: "1", state, reason: "", nodes: "", partition: "", restarts: 0 },
  });
  assert.deepEqual(infraRetry(retry, 1, job("NODE_FAIL", true)), {
    retry: true,
    matched: "Slurm NODE_FAIL",
    match: "NODE_FAIL",
  });
  assert.equal(infraRetry(retry, 1, job("PREEMPTED", true))?.retry, true);
  assert.equal(infraRetry(retry, 2, job("PREEMPTED", true)), undefined); // attempts used up
  assert.equal(infraRetry(undefined, 1, job("NODE_FAIL", true)), undefined); // no policy
  assert.equal(infraRetry(retry, 1, job("FAILED", false)), undefined); // the log decides
  assert.equal(infraRetry(retry, 1, { status: "failed" }), undefined); // a local child
});
