import { deepEqual, equal, rejects, throws } from "node:assert/strict";
import { AffineError } from "./affine_errors.ts";
import { contiguousSplitMap, replicatedMap } from "./map.ts";
import { planTransfers } from "./plan_transfers.ts";
import {
  buildPlanFile,
  parsePlanFile,
  readPlanFile,
  stringifyPlanFile,
  writePlanFile,
} from "./plan_file.ts";
import { verifyPlan } from "./verify.ts";

const pairs = {
  "layers.0.w1": {
    source: replicatedMap([6, 4], [0, 1]),
    target: contiguousSplitMap([6, 4], [3, 3], 0),
  },
  "layers.0.b": { source: contiguousSplitMap([5], [2, 3], 0), target: replicatedMap([5], [0, 1]) },
};
const processes = { sourceProcesses: { 0: 0, 1: 1 }, targetProcesses: new Map([[0, 1], [1, 0]]) };

Deno.test("buildPlanFile() follows the plan file contract of docs/plan-sync.md", () => {
  const plans = planTransfers(pairs, {
    ...processes,
    elementSize: { "layers.0.w1": 4, "layers.0.b": 2 },
  });
  const file = buildPlanFile(plans, { policy: "local_first_least_loaded", pairs, ...processes });
  deepEqual(Object.keys(file), [
    "schema_version",
    "policy",
    "source_processes",
    "target_processes",
    "parameters",
  ]);
  equal(file.schema_version, 1);
  deepEqual(file.source_processes, { "0": 0, "1": 1 });
  deepEqual(file.target_processes, { "0": 1, "1": 0 });
  deepEqual(Object.keys(file.parameters), ["layers.0.b", "layers.0.w1"]);
  const w1 = file.parameters["layers.0.w1"];
  equal(w1.element_size, 4);
  deepEqual(w1.source_map.logical_shape, [6, 4]);
  deepEqual(Object.keys(w1.segments[0]), ["shape", "source", "target"]);
  equal(verifyPlan(file).error, null);
});

Deno.test("writePlanFile() and readPlanFile() round-trip a plan", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = buildPlanFile(planTransfers(pairs), { policy: "x", pairs });
    const path = `${dir}/plan.json`;
    await writePlanFile(path, file);
    deepEqual(await readPlanFile(path), JSON.parse(JSON.stringify(file)));
    deepEqual(JSON.parse(stringifyPlanFile(file)), JSON.parse(JSON.stringify(file)));
    await Deno.writeTextFile(path, "{");
    await rejects(readPlanFile(path), SyntaxError);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("parsePlanFile() names the malformed field", () => {
  const good = JSON.parse(
    JSON.stringify(buildPlanFile(planTransfers(pairs), { policy: "x", pairs })),
  );
  throws(() => parsePlanFile({ ...good, schema_version: 2 }), /schema_version: expected 1/);
  throws(() => parsePlanFile({ ...good, policy: 3 }), /plan.policy/);
  throws(() => parsePlanFile({ ...good, target_processes: { "-1": 0 } }), /not a location/);
  throws(
    () =>
      parsePlanFile({
        ...good,
        parameters: { w: { ...good.parameters["layers.0.b"], segments: 1 } },
      }),
    /plan.parameters.w.segments/,
  );
  throws(() => parsePlanFile([]), AffineError);
  deepEqual(parsePlanFile(good), good);
});
