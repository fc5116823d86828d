import assert from "node:assert/strict";
import { parseLog } from "./log.ts";
import { READER_CODES } from "./series.ts";

Deno.test("parseLog() reads DeepSpeedExamples lines with the default pattern", () => {
  const text = [
    "[INFO] starting",
    "Step 1, Loss: 2.3456, Time: 120ms",
    "Step 2, Loss: 2.2001, Time: 118ms",
    "steps: 3 loss: 2.1000 iter time (s): 0.1",
    "step=4, skipped=0, lr=0.0003",
  ].join("\n");
  const series = parseLog(text);
  assert.deepEqual([...series.steps], [1, 2, 3]);
  assert.deepEqual([...series.values.loss], [2.3456, 2.2001, 2.1]);
  assert.deepEqual(series.diagnostics, []);
});

Deno.test("parseLog() turns other named groups into metrics", () => {
  const pattern = String.raw`it (?<step>\d+) loss=(?<loss>\S+) lr=(?<lr>\S+)`;
  const series = parseLog("it 7 loss=1.5 lr=3e-4\nit 8 loss=nan lr=2e-4\n", pattern);
  assert.deepEqual([...series.steps], [7, 8]);
  assert.deepEqual([...series.values.lr], [3e-4, 2e-4]);
  assert.ok(Number.isNaN(series.values.loss[1]));
  assert.ok(series.diagnostics.some((d) => d.code === READER_CODES.nonFinite));
});

Deno.test("parseLog() names duplicate rank lines as identical duplicates", () => {
  const series = parseLog("Step 1, Loss: 2.5\nStep 1, Loss: 2.5\nStep 2, Loss: 2.25\n");
  assert.deepEqual([...series.steps], [1, 2]);
  const d = series.diagnostics.find((x) => x.code === READER_CODES.duplicateSame);
  assert.equal(d?.level, "info");
});

Deno.test("parseLog() names a pattern without a step group or with bad syntax", () => {
  assert.equal(parseLog("x", "(?<loss>\\d+)").diagnostics[0].code, READER_CODES.badPattern);
  assert.equal(parseLog("x", "(?<step>").diagnostics[0].code, READER_CODES.badPattern);
});
