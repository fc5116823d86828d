import assert from "node:assert/strict";
import { REPLICA_POLICY_NAMES } from "../affine/mod.ts";
import { FAULT_NAMES, NATIVE_MARKER } from "../../reference_trainer/mod.ts";
import { REFERENCE_CLI, REFERENCE_PRESET } from "./reference_preset.ts";
import { presetFlags, topologyArgs } from "./preset.ts";

// The harness never imports the trainer; these tests keep the descriptor's copies in step.

Deno.test("reference preset: faults, marker and policies are the trainer's own", () => {
  assert.deepEqual([...REFERENCE_PRESET.faults].sort(), [...FAULT_NAMES].sort());
  assert.equal(REFERENCE_PRESET.checkpointMarker, NATIVE_MARKER);
  assert.deepEqual(REFERENCE_PRESET.policies, REPLICA_POLICY_NAMES);
});

Deno.test("reference preset: every flag it passes is one the trainer's train command accepts", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--quiet", REFERENCE_CLI, "train", "--help"],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const help = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  for (const [key, arg] of Object.entries(REFERENCE_PRESET.args)) {
    assert.ok(help.includes(arg.flag), `${key}: the trainer's help does not list ${arg.flag}`);
  }
});

Deno.test("presetFlags() passes set arguments in key order, objects as JSON", () => {
  assert.deepEqual(
    presetFlags(REFERENCE_PRESET, {
      zero_stage: 2,
      world_size: 4,
      placement: { version: 1, num_experts: 1, ep_size: 1, ranks: [] },
      fault: "",
      unknown_key: 1,
    }),
    [
      "--placement",
      '{"version":1,"num_experts":1,"ep_size":1,"ranks":[]}',
      "--world-size",
      "4",
      "--zero-stage",
      "2",
    ],
  );
  assert.deepEqual(topologyArgs(REFERENCE_PRESET), [
    "world_size",
    "ep_size",
    "placement",
    "zero_stage",
  ]);
});
