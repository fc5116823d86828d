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
