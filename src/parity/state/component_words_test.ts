import assert from "node:assert/strict";
import type { StateCheckSummary } from "../../types/summary.ts";
import {
  componentLabel,
  componentList,
  frameworkOf,
  masterNotRestored,
} from "./component_words.ts";

const check = (over: Partial<StateCheckSummary>): StateCheckSummary => ({
  phase: "resume-native",
  verdict: "FAIL",
  available: true,
  differing: [],
  ...over,
});

Deno.test("componentLabel() names DeepSpeed's components in its words, others as they are", () => {
  assert.equal(componentLabel("params", "deepspeed"), "params (the fp32 master)");
  assert.equal(
    componentLabel("module_weights", "deepspeed"),
    "module_weights (the bf16/fp16 module weights)",
  );
  assert.equal(componentLabel("params", undefined), "params");
  assert.equal(componentLabel("rng", "deepspeed"), "rng");
  assert.equal(
    componentList(["exp_avg", "params"], "deepspeed"),
    "exp_avg, params (the fp32 master)",
  );
});

Deno.test("componentLabel() says grad_buffers in words under every framework", () => {
  const words = "grad_buffers (the gradients carried into the first resumed step)";
  assert.equal(componentLabel("grad_buffers", undefined), words);
  assert.equal(componentLabel("grad_buffers", "deepspeed"), words);
});

Deno.test("frameworkOf() takes the first check that names a framework", () => {
  assert.equal(frameworkOf([check({}), check({ framework: "deepspeed" })]), "deepspeed");
  assert.equal(frameworkOf([check({})]), undefined);
});

Deno.test("masterNotRestored() needs master and optimizer state differing, module weights equal", () => {
  const pr7786 = check({
    framework: "deepspeed",
    differing: ["exp_avg", "exp_avg_sq", "optimizer_step", "params"],
    compared: ["exp_avg", "exp_avg_sq", "module_weights", "optimizer_step", "params"],
  });
  assert.equal(
    masterNotRestored(pr7786),
    "module weights restored, fp32 master and optimizer state not",
  );
  // Module weights differing too, or not compared, or another framework: not this pattern.
  assert.equal(
    masterNotRestored({ ...pr7786, differing: [...pr7786.differing, "module_weights"] }),
    "",
  );
  assert.equal(masterNotRestored({ ...pr7786, compared: ["params", "exp_avg"] }), "");
  assert.equal(masterNotRestored({ ...pr7786, framework: undefined }), "");
  assert.equal(masterNotRestored({ ...pr7786, differing: ["params"] }), "");
});
