import assert from "node:assert/strict";
import type { CalibrationResult, Verdict } from "../../types/summary.ts";
import { summarize } from "./sensitivity.ts";

function tried(...rows: [number, Verdict, boolean | null][]): CalibrationResult[] {
  return rows.map(([lr_error, verdict, applied]) => ({
    phase: `calibrate-r-lr${lr_error.toExponential()}`,
    lr_error,
    verdict,
    first_divergent_step: verdict === "FAIL" ? 52 : null,
    ...(verdict === "FAIL" ? { test: "early" as const } : {}),
    applied,
  }));
}

Deno.test("summarize(): the smallest error from which every larger one FAILs, and the one below", () => {
  const s = summarize(
    tried([1e-4, "PASS", true], [1e-3, "FAIL", true], [1e-2, "FAIL", true]),
    "drift",
  );
  assert.equal(s.detects, 1e-3);
  assert.equal(s.missed, 1e-4);
  assert.equal(
    s.statement,
    "would have caught an LR error of 0.1 % or more (first divergent step 52, early test); " +
      "an error of 0.01 % passed",
  );
});

Deno.test("summarize(): a caught error below a missed one claims only the chain above", () => {
  // 1e-4 FAILs by chance and 1e-3 passes: only 1e-2 is a claim the grid supports.
  const s = summarize(
    tried([1e-4, "FAIL", true], [1e-3, "PASS", true], [1e-2, "FAIL", true]),
    "drift",
  );
  assert.equal(s.detects, 1e-2);
  assert.equal(s.missed, 1e-3);
});

Deno.test("summarize(): nothing caught points at the state check; ignored ones are not counted", () => {
  const none = summarize(tried([1e-3, "PASS", true], [1e-2, "PASS", null]), "drift");
  assert.equal(none.detects, null);
  assert.equal(none.missed, 1e-2);
  assert.match(none.statement, /cannot tell an LR error of up to 1 % from reduction-order drift/);
  assert.match(none.statement, /restored-state check is the evidence/);
  assert.match(none.statement, /not verified/);
  // A FAIL whose LR never changed proves nothing: it neither detects nor breaks the chain.
  const ignored = summarize(tried([1e-3, "FAIL", false], [1e-2, "FAIL", true]), "exact");
  assert.equal(ignored.detects, 1e-2);
  assert.match(ignored.statement, /1 % is the smallest error tried/);
  const nothing = summarize(tried([1e-3, "PASS", false]), "exact");
  assert.equal(nothing.detects, null);
  assert.match(nothing.statement, /^no calibration took effect/);
});

Deno.test("summarize(): an ERROR calibration is no detection", () => {
  const s = summarize(tried([1e-3, "FAIL", true], [1e-2, "ERROR", null]), "tolerance");
  assert.equal(s.detects, null);
  assert.match(s.statement, /from what this lane allows/);
});

Deno.test("summarize(): a comparison that does not PASS is not calibrated", () => {
  // Its calibrations carry its own fault: they would "detect" any LR error.
  const s = summarize(tried([1e-4, "FAIL", true], [1e-3, "FAIL", true]), "drift", "FAIL");
  assert.equal(s.detects, null);
  assert.equal(s.tried.length, 2);
  assert.match(s.statement, /^not measured: the comparison is FAIL itself/);
});
