import assert from "node:assert/strict";
import { twoSidedQuantile, twoSidedTail } from "./_student_t.ts";

Deno.test("twoSidedTail() matches Student's t tables", () => {
  // Two-sided 5 % critical values: 12.706 (1 df), 2.262 (9 df), 1.960 (normal limit).
  for (const [t, df] of [[12.7062, 1], [2.262157, 9], [1.959964, 1e6]]) {
    assert.ok(Math.abs(twoSidedTail(t, df) - 0.05) < 1e-5, `t ${t}, df ${df}`);
  }
  // The drift lane's default: |t| > 5 with 9 df has probability 7.4e-4.
  assert.ok(Math.abs(twoSidedTail(5, 9) - 7.39e-4) < 1e-6);
  assert.equal(twoSidedTail(Infinity, 4), 0);
});

Deno.test("twoSidedQuantile() inverts twoSidedTail() and grows as the degrees of freedom fall", () => {
  const p = twoSidedTail(5, 9);
  assert.ok(Math.abs(twoSidedQuantile(p, 9) - 5) < 1e-9);
  const limits = [4, 5, 6, 7, 8].map((df) => twoSidedQuantile(p, df));
  assert.ok(Math.abs(limits[0] - 9.3158) < 1e-3, String(limits[0]));
  for (let i = 1; i < limits.length; i++) assert.ok(limits[i] < limits[i - 1]);
});
