import assert from "node:assert/strict";
import { bytes } from "../format/numbers.ts";
import type { PlanSyncSummary } from "../types/summary.ts";
import { planLoadRows, planLoadSpec } from "./plan_load.ts";
import { compilesCleanly, type Json, rendersCleanly, svgTexts } from "./_testing.ts";

function plan(policy: string, perProcess?: PlanSyncSummary["per_process"]): PlanSyncSummary {
  return {
    policy,
    phase: `plan-${policy}`,
    verified: perProcess !== undefined,
    segments: 4,
    moved_bytes: 30,
    local_bytes: 0,
    max_process_bytes: 20,
    mean_process_bytes: 15,
    ...(perProcess ? { per_process: perProcess } : {}),
  };
}

Deno.test("planLoadSpec() groups send/receive bars per process and policy", async () => {
  const plans = [
    plan("first_holder", { "10": { send: 10, recv: 20 }, "2": { send: 20, recv: 10 } }),
    plan("no_loads"),
  ];
  assert.deepEqual(planLoadRows(plans), [
    { policy: "first_holder", process: "2", direction: "send", bytes: 20 },
    { policy: "first_holder", process: "2", direction: "receive", bytes: 10 },
    { policy: "first_holder", process: "10", direction: "send", bytes: 10 },
    { policy: "first_holder", process: "10", direction: "receive", bytes: 20 },
  ]);
  const spec = planLoadSpec("x", plans)!;
  await compilesCleanly(spec);
  assert.match(JSON.stringify(spec), /"xOffset"/);
  assert.equal(planLoadSpec("x", [plans[1]]), null);
});

Deno.test("planLoadSpec() prints bytes on the axis and in tooltips as the plan table does", async () => {
  // The quickstart's loads: 14.6 KiB and 6.2 KiB (the old axis said "14.6k" and "6k").
  const spec: Json = planLoadSpec("quickstart", [
    plan("first_holder", {
      "0": { send: 14_592, recv: 6_336 },
      "1": { send: 6_336, recv: 14_592 },
    }),
  ])!;
  const rows = spec.data.values as Json[];
  assert.deepEqual(rows.map((r) => r.bytes_text), rows.map((r) => bytes(r.bytes)));
  assert.ok(rows.some((r) => r.bytes_text === "14.25\u00a0KiB"));
  assert.ok(
    spec.spec.encoding.tooltip.some((t: Json) => t.field === "bytes_text"),
    "tooltips show the preformatted text",
  );
  const labels = svgTexts(await rendersCleanly(spec)).filter((t) => /B$/.test(t));
  assert.deepEqual(labels, ["0\u00a0B", "4\u00a0KiB", "8\u00a0KiB", "12\u00a0KiB", "16\u00a0KiB"]);
});
