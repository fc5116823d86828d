import assert from "node:assert/strict";
import { specStub } from "./_testing.ts";
import type { PhaseSummary } from "../types/summary.ts";
import { billLine, longestChain, phaseSteps, plannedBill, runBill } from "./run_bill.ts";

const spec = specStub;

// The seed's shape: baseline 100, split 50, native 50, convert, universal 50.
const SEED = [
  spec("baseline", "baseline", 100),
  spec("split", "split", 50),
  spec("resume-native", "resume", 100, ["split"]),
  spec("convert", "convert", 50, ["split"], "converter"),
  spec("resume-universal", "resume", 100, ["convert"]),
];

const ran = (name: string, wall: number, extra: Partial<PhaseSummary> = {}): PhaseSummary => ({
  name,
  role: "baseline",
  status: "ok",
  cached: false,
  wall_s: wall,
  exit_code: 0,
  ...extra,
});

Deno.test("phaseSteps counts a resume from the save, a converter as nothing", () => {
  assert.deepEqual(SEED.map((s) => phaseSteps(s, 50)), [100, 50, 50, 0, 50]);
});

Deno.test("plannedBill: 250 step-equivalents, the critical path 100", () => {
  const bill = plannedBill(SEED, 50);
  assert.equal(bill.step_equivalents, 250);
  assert.equal(bill.critical_path_steps, 100);
  assert.equal(bill.widest_phase_devices, 2);
});

Deno.test("runBill: device-seconds, the critical path by wall time, cached and shared savings", () => {
  const summaries = [
    ran("baseline", 0, { cached: true, shared_from: "other-experiment" }),
    ran("split", 5),
    ran("resume-native", 6),
    ran("convert", 2),
    ran("resume-universal", 5, { cached: true }),
  ];
  const bill = runBill(SEED, summaries, 50, 12);
  assert.equal(bill.step_equivalents, 100); // split 50 + native 50
  assert.equal(bill.device_seconds, 5 * 2 + 6 * 2 + 2 * 1);
  assert.deepEqual(bill.critical_path, ["split", "resume-native"]);
  assert.equal(bill.critical_path_s, 11);
  assert.equal(bill.wall_over_critical, 1.091);
  assert.deepEqual(bill.cached, { phases: 1, step_equivalents: 50 });
  assert.deepEqual(bill.shared, { phases: 1, step_equivalents: 100 });
  assert.match(billLine(bill), /100 step-equivalents trained.*sharing saved 100/);
});

Deno.test("longestChain follows the heaviest producer", () => {
  const chain = longestChain(SEED, (s) => s.name === "convert" ? 10 : phaseSteps(s, 50));
  assert.deepEqual(chain, { total: 110, phases: ["split", "convert", "resume-universal"] });
});
