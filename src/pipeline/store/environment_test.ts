import assert from "node:assert/strict";
import { codeInputDir, environmentKey, pythonOf, referencedVariables } from "./environment.ts";

Deno.test("environmentKey: hardware class, trainer code and framework digests", async () => {
  const facts = {
    cpu_model: "x",
    cpu_count: 1,
    hardware_class: "gpu-nvidia-h100",
    frameworks: { deno: "2.9.6", torch: "2.5.1" },
    variables: {},
    code: { trainer: { inputs: [], digest: "0123456789abcdef".repeat(4), git: {} } },
  };
  const key = await environmentKey(facts);
  assert.match(key, /^gpu-nvidia-h100\.code-0123456789ab\.fw-[0-9a-f]{8}$/);
  // The CPU model is a fact, not part of the key; a framework version is.
  assert.equal(await environmentKey({ ...facts, cpu_model: "y" }), key);
  const newer = { ...facts, frameworks: { deno: "2.9.6", torch: "2.6.0" } };
  assert.notEqual(await environmentKey(newer), key);
});

Deno.test("codeInputDir: paths and git -C commands, with ${env.NAME}", () => {
  const env = { DS: "/src/DeepSpeed" };
  assert.equal(codeInputDir("train.py", "/exp", env), "/exp/train.py");
  assert.equal(codeInputDir("!git -C ${env.DS} rev-parse HEAD", "/exp", env), "/src/DeepSpeed");
  assert.equal(codeInputDir("!pip freeze", "/exp", env), null);
});

Deno.test("referencedVariables: ${env.NAME} names, sorted and unique", () => {
  assert.deepEqual(referencedVariables("a: ${env.B}\nb: ${env.A} ${env.B} ${steps}"), ["A", "B"]);
});

Deno.test("pythonOf: python itself, the venv python beside torchrun or deepspeed, else null", () => {
  assert.equal(pythonOf("/v/bin/python"), "/v/bin/python");
  assert.equal(pythonOf("python3.11"), "python3.11");
  assert.equal(pythonOf("/v2/bin/torchrun"), "/v2/bin/python");
  assert.equal(pythonOf("/v2/bin/deepspeed"), "/v2/bin/python");
  assert.equal(pythonOf("/usr/bin/deno"), null);
});
