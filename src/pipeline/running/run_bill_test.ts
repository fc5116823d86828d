import assert from "node:assert/strict";
import { specStub } from "./_testing.ts";
import type { PhaseSummary } from "../../types/summary.ts";
import type { PhaseSpec } from "../../types/phase_spec.ts";
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
    ran("baseline", 0, { cached: true, shared_from: "other-experiment", reused_wall_s: 9 }),
    ran("split", 5),
    ran("resume-native", 6),
    ran("convert", 2),
    ran("resume-universal", 0, { cached: true, reused_wall_s: 5 }),
  ];
  const bill = runBill(SEED, summaries, 50, 12);
  assert.equal(bill.step_equivalents, 100); // split 50 + native 50
  assert.equal(bill.device_seconds, 5 * 2 + 6 * 2 + 2 * 1);
  assert.deepEqual(bill.critical_path, ["split", "resume-native"]);
  assert.equal(bill.critical_path_s, 11);
  assert.equal(bill.wall_over_critical, 1.091);
  // Savings in device-seconds: the wall each reused phase took where it ran × its 2 devices.
  assert.deepEqual(bill.cached, { phases: 1, step_equivalents: 50, device_seconds: 10 });
  assert.deepEqual(bill.shared, { phases: 1, step_equivalents: 100, device_seconds: 18 });
  assert.equal(bill.fused, undefined);
  assert.match(
    billLine(bill),
    /100 step-equivalents trained.*sharing saved 100 step-equivalents, 18\.0 device-seconds/,
  );
});

// The seed's shape fused (issue 37): the baseline saves at 50 and trains on; no split phase.
const FUSED = [
  { ...spec("baseline", "baseline", 100), paths: { checkpointTag: "ck/global_step50" } },
  spec("resume-native", "resume", 100, ["baseline"]),
  spec("convert", "convert", 50, ["baseline"], "converter"),
  spec("resume-universal", "resume", 100, ["convert"]),
] as PhaseSpec[];

Deno.test("plannedBill of a fused split: 200 step-equivalents, fusing saves the split's 50", () => {
  const bill = plannedBill(FUSED, 50);
  assert.equal(bill.step_equivalents, 200);
  assert.equal(bill.fused_step_equivalents, 50);
  assert.deepEqual(bill.critical_path, ["baseline", "resume-native"]);
  assert.equal(plannedBill(SEED, 50).fused_step_equivalents, 0);
});

Deno.test("runBill of a fused split prices the split that did not run at the baseline's wall", () => {
  const summaries = [
    ran("baseline", 8),
    ran("resume-native", 4),
    ran("convert", 1),
    ran("resume-universal", 4),
  ];
  const bill = runBill(FUSED, summaries, 50, 14);
  assert.equal(bill.step_equivalents, 200);
  // 50 of the baseline's 100 steps, 8 s, on 2 devices.
  assert.deepEqual(bill.fused, { phases: 1, step_equivalents: 50, device_seconds: 8 });
  assert.match(billLine(bill), /fusing saved 50 step-equivalents, 8\.0 device-seconds/);
  // A cached fused baseline is priced at the wall it took where it ran.
  const cached = runBill(FUSED, [ran("baseline", 0, { cached: true, reused_wall_s: 6 })], 50, 1);
  assert.equal(cached.fused?.device_seconds, 6);
});

Deno.test("longestChain follows the heaviest producer", () => {
  const chain = longestChain(SEED, (s) => s.name === "convert" ? 10 : phaseSteps(s, 50));
  assert.deepEqual(chain, { total: 110, phases: ["split", "convert", "resume-universal"] });
});
