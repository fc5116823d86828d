import assert from "node:assert/strict";
import { isActiveState, isInfraState, jobOutcome } from "./slurm_states.ts";

Deno.test("isActiveState: queued, running and requeued jobs are followed", () => {
  for (const s of ["PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "SUSPENDED"]) {
    assert.ok(isActiveState(s), s);
  }
  for (const s of ["COMPLETED", "FAILED", "TIMEOUT", "CANCELLED by 0", "NODE_FAIL", "PREEMPTED"]) {
    assert.ok(!isActiveState(s), s);
  }
});

Deno.test("jobOutcome: every final Slurm state maps to a phase status with its reason", () => {
  const at = { reason: "None", nodes: "n1", exitCode: 0 };
  const cases: Array<[string, number | null, string, boolean, RegExp]> = [
    ["COMPLETED", 0, "ok", false, /Slurm job 9 COMPLETED on n1, exit code 0/],
    ["COMPLETED", 2, "failed", false, /exit code 2/],
    ["FAILED", 1, "failed", false, /FAILED/],
    ["TIMEOUT", null, "timeout", false, /time limit/],
    ["CANCELLED by 0", null, "failed", false, /CANCELLED/],
    ["NODE_FAIL", null, "failed", true, /NODE_FAIL/],
    ["PREEMPTED", null, "failed", true, /PREEMPTED/],
    ["BOOT_FAIL", null, "failed", true, /BOOT_FAIL/],
    ["OUT_OF_MEMORY", 137, "failed", false, /out of memory/],
  ];
  for (const [state, exitCode, status, infra, message] of cases) {
    const outcome = jobOutcome("9", state, { ...at, exitCode });
    assert.equal(outcome.status, status, state);
    assert.equal(outcome.infra, infra, state);
    assert.match(outcome.message, message);
  }
  assert.match(
    jobOutcome("9", "FAILED", { reason: "NonZeroExitCode" }).message,
    /\(NonZeroExitCode\)/,
  );
});

Deno.test("isInfraState(): the cluster's faults, whatever suffix Slurm adds", () => {
  for (const state of ["NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "node_fail+"]) {
    assert.ok(isInfraState(state), state);
  }
  for (const state of ["FAILED", "CANCELLED by 0", "TIMEOUT", "COMPLETED"]) {
    assert.ok(!isInfraState(state), state);
  }
});
