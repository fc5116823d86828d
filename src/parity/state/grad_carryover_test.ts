import assert from "node:assert/strict";
import { parseJsonl } from "../../metrics/jsonl.ts";
import { jsonl } from "../../../test/_testing/metrics_fixtures.ts";
import type { StateCheckSummary } from "../../types/summary.ts";
import { GRAD_BUFFERS, withGradBuffers } from "./grad_carryover.ts";

const restored: StateCheckSummary = {
  phase: "resume-native",
  verdict: "PASS",
  available: true,
  differing: [],
  compared: ["params", "rng"],
  reason: "all 2 state components match the saved digests.",
};

/** A phase's metrics with a `grads` event at `step`. */
const grads = (digest: string, step = 21, tensors?: Record<string, string>) =>
  parseJsonl(jsonl([
    { step: 20, loss: 1 },
    { event: "grads", step, digests: { grad_buffers: digest }, ...(tensors ? { tensors } : {}) },
    { step: 21, loss: 1 },
  ]));

Deno.test("withGradBuffers() compares the buffers at the first resumed step and passes equal ones", () => {
  const r = withGradBuffers(restored, grads("z"), grads("z"), 20);
  assert.equal(r.verdict, "PASS");
  assert.deepEqual(r.compared, ["params", "rng", GRAD_BUFFERS]);
  assert.deepEqual(r.differing, []);
});

Deno.test("withGradBuffers() fails a resume whose first step starts from other gradients", () => {
  const r = withGradBuffers(
    restored,
    grads("carried", 21, { "w · grad": "a", "b · grad": "z" }),
    grads("z", 21, { "w · grad": "z", "b · grad": "z" }),
    20,
  );
  assert.equal(r.verdict, "FAIL");
  assert.deepEqual(r.differing, [GRAD_BUFFERS]);
  assert.deepEqual(r.differing_tensors, ["w · grad"]);
  assert.match(
    r.reason ?? "",
    /match the saved digests\. The gradient buffers at the start of step 21 differ/,
  );
  assert.match(
    r.reason ?? "",
    /carried gradients into that step that this fresh process does not have/,
  );
  // Another component already named its tensors: those stay, the component is added.
  const named = {
    ...restored,
    verdict: "FAIL" as const,
    differing: ["rng"],
    differing_tensors: ["x"],
  };
  const both = withGradBuffers(named, grads("carried"), grads("z"), 20);
  assert.deepEqual([both.differing, both.differing_tensors], [["rng", GRAD_BUFFERS], ["x"]]);
});

Deno.test("withGradBuffers() leaves the check alone without a grads event on both sides at N+1", () => {
  const none = parseJsonl(jsonl([{ step: 21, loss: 1 }]));
  assert.equal(withGradBuffers(restored, none, grads("z"), 20), restored);
  assert.equal(withGradBuffers(restored, grads("a"), undefined, 20), restored);
  // A grads event of another step is not the first resumed step's.
  assert.equal(withGradBuffers(restored, grads("a", 22), grads("z"), 20), restored);
});

Deno.test("withGradBuffers() gives an N/A restored check (no digests) a FAIL of its own", () => {
  const na: StateCheckSummary = {
    phase: "resume-native",
    verdict: "N/A",
    available: false,
    differing: [],
    reason: "neither event carries state digests, so the restored state cannot be checked.",
  };
  const r = withGradBuffers(na, grads("carried"), grads("z"), 20);
  assert.deepEqual([r.verdict, r.available, r.differing], ["FAIL", true, [GRAD_BUFFERS]]);
  assert.match(r.reason ?? "", /^The gradient buffers at the start of step 21/);
});
