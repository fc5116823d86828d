import assert from "node:assert/strict";
import type { RunSummary } from "../types/summary.ts";
import { billSentences } from "./_bill.ts";

const phase = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  role: "baseline",
  status: "ok",
  cached: false,
  wall_s: 1,
  exit_code: 0,
  ...extra,
});

Deno.test("billSentences: the bill, what the cache and sharing saved, the pool's devices", () => {
  const summary = {
    phases: [
      phase("baseline", {
        cached: true,
        shared_from: "nightly-a",
        source_run: "/r/nightly-a/20261204T000000Z-aaaaaa",
      }),
      phase("split", { devices: { kind: "cuda", ids: [0, 1] } }),
      phase("resume-native", { cached: true }),
    ],
    bill: {
      step_equivalents: 50,
      device_seconds: 12.5,
      wall_s: 7,
      critical_path_s: 6.5,
      critical_path: ["split"],
      wall_over_critical: 1.077,
      cached: { phases: 1, step_equivalents: 50 },
      shared: { phases: 1, step_equivalents: 100 },
    },
  } as unknown as RunSummary;
  const lines = billSentences(summary);
  assert.equal(
    lines[0],
    "50 step-equivalents trained, 12.5 device-seconds; wall 7.0 s against a critical path of " +
      "6.5 s (split), ×1.08.",
  );
  assert.match(lines[1], /^The cache saved 50 step-equivalents \(1 phases/);
  assert.match(lines[2], /Sharing saved 100 .*nightly-a run 20261204T000000Z-aaaaaa: baseline\.$/);
  assert.equal(lines[3], "Devices (cuda): split [0,1].");
  assert.deepEqual(billSentences({ ...summary, bill: undefined }), []);
});

Deno.test("billSentences: savings in device-seconds, and what fusing the split saved", () => {
  const summary = {
    save_at: 20,
    phases: [phase("baseline"), phase("resume-native", { cached: true, reused_wall_s: 3 })],
    bill: {
      step_equivalents: 40,
      device_seconds: 8,
      wall_s: 3,
      critical_path_s: 2,
      critical_path: ["baseline"],
      wall_over_critical: 1.5,
      cached: { phases: 1, step_equivalents: 20, device_seconds: 6 },
      shared: { phases: 0, step_equivalents: 0, device_seconds: 0 },
      fused: { phases: 1, step_equivalents: 20, device_seconds: 2.5 },
    },
  } as unknown as RunSummary;
  const lines = billSentences(summary);
  assert.match(lines[1], /^The cache saved 20 step-equivalents, 6\.0 device-seconds \(1 phases/);
  assert.match(
    lines[2],
    /^Fusing the split saved 20 step-equivalents, 2\.5 device-seconds \(schedule\.split: fused: the baseline saved at step 20 and trained on; no split phase ran/,
  );
});
