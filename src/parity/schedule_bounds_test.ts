import assert from "node:assert/strict";
import { emptySeries, type MetricSeries } from "../metrics/series.ts";
import type { PhaseSpec } from "../types/phase_spec.ts";
import { scheduleDiagnostics } from "./schedule_bounds.ts";

function series(steps: number[]): MetricSeries {
  return { ...emptySeries(), steps: Float64Array.from(steps) };
}

function spec(name: string, role: PhaseSpec["role"], stopAt: number): PhaseSpec {
  return { name, role, stopAt } as PhaseSpec;
}

Deno.test("scheduleDiagnostics: steps beyond the schedule and before a resume window are errors", () => {
  const specs = [spec("baseline", "baseline", 40), spec("resume-native", "resume", 40)];
  const read = new Map([
    ["baseline", series([1, 2, 40, 1e30])],
    ["resume-native", series([19, 21, 40])],
  ]);
  const found = scheduleDiagnostics(specs, read, 20);
  assert.deepEqual(found.map((d) => [d.code, d.phase, d.step, d.level]), [
    ["metrics-beyond-schedule", "baseline", 1e30, "error"],
    ["metrics-before-resume-window", "resume-native", 19, "error"],
  ]);
  assert.deepEqual(
    scheduleDiagnostics(specs, new Map([["baseline", series([1, 40])]]), 20),
    [],
    "a clean schedule has no finding",
  );
  assert.deepEqual(
    scheduleDiagnostics(specs, new Map([["baseline", series([1, 80])]]), 20, true),
    [],
    "micro-batch steps are left to step-unit-micro-batches",
  );
});

Deno.test("scheduleDiagnostics: a split past its last save, a resume before its own from_step", () => {
  const split = spec("split", "split", 6); // save_at [3, 6]: it stops after 6
  const early = { ...spec("resume-early", "resume", 10), fromStep: 3 } as PhaseSpec;
  const read = new Map([
    ["split", series([1, 3, 6, 7, 8])],
    ["resume-early", series([3, 4, 10])],
  ]);
  const found = scheduleDiagnostics([split, early], read, 6);
  assert.deepEqual(found.map((d) => [d.code, d.phase, d.step, d.count]), [
    ["metrics-beyond-schedule", "split", 7, 2],
    ["metrics-before-resume-window", "resume-early", 3, 1],
  ]);
  assert.match(found[1].message, /save point 3 .*starts at step 4/);
  // Steps 4..6 are inside the window of a resume from step 3.
  assert.deepEqual(
    scheduleDiagnostics([early], new Map([["resume-early", series([4, 5, 6])]]), 6),
    [],
  );
});
