import assert from "node:assert/strict";
import { IDENTICAL_LABEL, NON_FINITE_LABEL, stripKinds, stripRuns } from "./_strip.ts";

Deno.test("stripRuns() makes one bar per stretch of identical or non-finite steps", () => {
  const rows = [
    { step: 21, a: 1, b: 1 },
    { step: 22, a: 1, b: 1 },
    { step: 23, a: 1, b: 2 },
    { step: 24, a: 1, b: NaN },
    { step: 25, a: NaN, b: NaN },
    { step: 26, a: 2, b: 2 },
  ];
  const runs = stripRuns(rows);
  assert.deepEqual(runs.map((r) => [r.kind, r.from, r.to, r.lo, r.hi, r.steps_text]), [
    [IDENTICAL_LABEL, 21, 22, 20.5, 22.5, "steps 21–22 (2)"],
    [NON_FINITE_LABEL, 24, 25, 23.5, 25.5, "steps 24–25 (2)"],
    [IDENTICAL_LABEL, 26, 26, 25.5, 26.5, "step 26"],
  ]);
  assert.deepEqual(stripKinds(runs), [IDENTICAL_LABEL, NON_FINITE_LABEL]);
  assert.deepEqual(stripKinds([]), [IDENTICAL_LABEL]);
  const long = Array.from({ length: 10_000 }, (_, i) => ({ step: i + 1, a: 0.5, b: 0.5 }));
  assert.equal(stripRuns(long).length, 1, "10,000 identical steps are one mark");
});
