import assert from "node:assert/strict";
import { parseLossesCsv, repeatPhases, seriesOf } from "./losses_table.ts";

Deno.test("parseLossesCsv() keeps full precision, gaps as null and NaN as NaN", () => {
  const table = parseLossesCsv(
    "step,baseline,resume-native,baseline-repeat-1\n1,2.7182818284590451,,2.718281828459045\n2,NaN,0.30000000000000004,1\n",
  );
  assert.deepEqual(table.phases, ["baseline", "resume-native", "baseline-repeat-1"]);
  assert.deepEqual(table.steps, [1, 2]);
  assert.equal(table.columns.baseline[0], 2.718281828459045);
  assert.ok(Number.isNaN(table.columns.baseline[1]));
  assert.deepEqual(table.columns["resume-native"], [null, 0.30000000000000004]);
  assert.deepEqual(seriesOf(table, "resume-native"), { steps: [2], values: [0.30000000000000004] });
  assert.deepEqual(seriesOf(table, "absent"), { steps: [], values: [] });
  assert.deepEqual(repeatPhases(table), ["baseline-repeat-1"]);
});

Deno.test("parseLossesCsv() rejects a file without a step column or with a bad step", () => {
  assert.throws(() => parseLossesCsv("phase,baseline\n1,2\n"), /step/);
  assert.throws(() => parseLossesCsv("step,baseline\n1.5,2\n"), /bad step/);
  assert.throws(() => parseLossesCsv(""), /empty/);
});
