import assert from "node:assert/strict";
import { comparePlanExecution, type ProcessStateDocument } from "./plan_execution.ts";

const kinds = (slots: string[]) => ({
  module: { dtype: "bfloat16", slots: slots.map((s) => `m${s}`) },
  fp32: { dtype: "float32", slots: slots.map((s) => `f${s}`) },
  exp_avg: { dtype: "float32", slots: slots.map((s) => `a${s}`) },
});

function doc(
  source: string,
  processes: Record<string, [number[], string[]]>,
): ProcessStateDocument {
  return {
    schema_version: 1,
    source,
    processes: Object.fromEntries(
      Object.entries(processes).map(([p, [experts, slots]]) => [p, {
        params: {
          "layers.1.experts.w2": { experts, shape: [experts.length, 4, 8], ...kinds(slots) },
        },
      }]),
    ),
  };
}

Deno.test("comparePlanExecution() passes when every process holds the same bytes per slot", () => {
  const layout = { "0": [[0, 1], ["x", "y"]], "1": [[2, 3], ["z", "w"]] } as const;
  const a = doc("plan-execute", structuredClone(layout) as never);
  const b = doc("resume-universal", structuredClone(layout) as never);
  const r = comparePlanExecution("execute-plan-first_holder", "resume-ep1", a, b);
  assert.equal(r.verdict, "PASS");
  assert.equal(r.compared, 12);
  assert.deepEqual(r.kinds, ["module", "fp32", "exp_avg"]);
  assert.match(r.reason, /12 expert slots .* agree byte for byte on 2 processes/);
});

Deno.test("comparePlanExecution() names parameter, expert, kind, process and region of a mismatch", () => {
  const a = doc("plan-execute", { "0": [[0, 1], ["x", "y"]], "1": [[2, 3], ["z", "BAD"]] });
  const b = doc("resume-universal", { "0": [[0, 1], ["x", "y"]], "1": [[2, 3], ["z", "w"]] });
  const r = comparePlanExecution("execute-plan-x", "resume-ep1", a, b);
  assert.equal(r.verdict, "FAIL");
  assert.equal(r.mismatch_count, 3); // module, fp32 and exp_avg of that slot
  assert.deepEqual(r.mismatches[0], {
    process: 1,
    parameter: "layers.1.experts.w2",
    kind: "module",
    expert: 3,
    slot: 1,
    region: "[3:4, 0:4, 0:8]",
    detail: "bytes differ",
  });
  assert.match(r.reason, /layers\.1\.experts\.w2 · expert 3 · module · process 1/);
});

Deno.test("comparePlanExecution() catches a slot holding another expert (a map that lies)", () => {
  const a = doc("plan-execute", { "0": [[1, 0], ["y", "x"]] });
  const b = doc("resume-universal", { "0": [[0, 1], ["x", "y"]] });
  const r = comparePlanExecution("e", "r", a, b);
  assert.equal(r.verdict, "FAIL");
  assert.match(r.mismatches[0].detail, /plan puts expert 1 in slot 0, the reshard expert 0/);
});

Deno.test("comparePlanExecution() fails a process or kind only one side has, ERRORs on nothing", () => {
  const a = doc("plan-execute", { "0": [[0], ["x"]] });
  const b = doc("resume-universal", { "0": [[0], ["x"]], "1": [[0], ["x"]] });
  const r = comparePlanExecution("e", "r", a, b);
  assert.equal(r.verdict, "FAIL");
  assert.equal(r.mismatches[0].detail, "the executed plan built no shard here");
  const noSq = doc("x", { "0": [[0], ["x"]] });
  const withSq = doc("y", { "0": [[0], ["x"]] });
  (withSq.processes["0"].params["layers.1.experts.w2"] as Record<string, unknown>).exp_avg_sq = {
    dtype: "float32",
    slots: ["q"],
  };
  assert.match(
    comparePlanExecution("e", "r", noSq, withSq).mismatches[0].detail,
    /only the reshard/,
  );
  const empty = { schema_version: 1, source: "x", processes: {} };
  assert.equal(comparePlanExecution("e", "r", empty, empty).verdict, "ERROR");
});
