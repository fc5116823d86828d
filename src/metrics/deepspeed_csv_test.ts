import assert from "node:assert/strict";
import { parseDeepspeedCsv, readDeepspeedCsv } from "./deepspeed_csv.ts";
import { readMetrics } from "./read.ts";
import { READER_CODES } from "./series.ts";
import { withTempDir } from "../../test/_testing/metrics_fixtures.ts";

Deno.test("readDeepspeedCsv() reads a csv_monitor folder with repeated headers and sample steps", async () => {
  await withTempDir(async (dir) => {
    // A resumed writer appended to both files: the header appears again mid-file.
    await Deno.writeTextFile(
      `${dir}/Train_Samples_train_loss.csv`,
      "step,train_loss\n8,2.5\n16,2.25\nstep,train_loss\n24,2.125\n32,2.0625\n",
    );
    await Deno.writeTextFile(
      `${dir}/Train_Samples_lr.csv`,
      "step,lr\n8,0.0001\n16,0.0002\nstep,lr\n24,0.0003\n32,0.0003\n",
    );
    const series = await readMetrics(dir, {
      format: "deepspeed-csv",
      step_unit: "samples",
      samples_per_step: 8,
    });
    assert.deepEqual([...series.steps], [1, 2, 3, 4]);
    assert.deepEqual([...series.values.loss], [2.5, 2.25, 2.125, 2.0625]);
    assert.deepEqual([...series.values.lr], [0.0001, 0.0002, 0.0003, 0.0003]);
    const repeated = series.diagnostics.find((d) => d.code === READER_CODES.repeatedHeader);
    assert.equal(repeated?.level, "info");
    assert.equal(repeated?.count, 2);
    assert.ok(series.diagnostics.some((d) => d.code === READER_CODES.lossAlias));
    assert.ok(!series.diagnostics.some((d) => d.level === "error"));
  });
});

Deno.test("parseDeepspeedCsv() names sample counts off the optimizer-step grid", () => {
  const series = parseDeepspeedCsv([{ name: "loss.csv", text: "step,loss\n8,2\n12,1.5\n" }], {
    step_unit: "samples",
    samples_per_step: 8,
  });
  const d = series.diagnostics.find((x) => x.code === READER_CODES.samplesNotAligned);
  assert.equal(d?.level, "error");
  assert.deepEqual([...series.steps], [1]);
});

Deno.test("parseDeepspeedCsv() asks for samples_per_step when steps are samples", () => {
  const series = parseDeepspeedCsv([{ name: "loss.csv", text: "step,loss\n8,2\n" }], {
    step_unit: "samples",
  });
  assert.ok(series.diagnostics.some((d) => d.code === READER_CODES.samplesPerStepMissing));
});

Deno.test("parseDeepspeedCsv() reads a multi-column file and flags a nan cell", () => {
  const series = parseDeepspeedCsv([{
    name: "losses.csv",
    text: "step,loss,grad_norm\n1,2.5,0.5\n2,nan,0.25\n3,2.25,x\n",
  }]);
  assert.deepEqual([...series.steps], [1, 2, 3]);
  assert.ok(Number.isNaN(series.values.loss[1]));
  const codes = series.diagnostics.map((d) => d.code);
  assert.ok(codes.includes(READER_CODES.nonFinite));
  assert.ok(codes.includes(READER_CODES.nonNumeric));
});

Deno.test("parseDeepspeedCsv() names steps going backwards within one file only", () => {
  const series = parseDeepspeedCsv([
    { name: "a_loss.csv", text: "step,loss\n1,2\n2,1.5\n" },
    { name: "b_lr.csv", text: "step,lr\n1,0.1\n2,0.2\n1,0.1\n" },
  ]);
  const backwards = series.diagnostics.filter((d) => d.code === READER_CODES.backwards);
  assert.equal(backwards.length, 1);
  assert.equal(backwards[0].count, 1);
  assert.match(backwards[0].message, /b_lr\.csv line 4/);
  assert.ok(series.diagnostics.some((d) => d.code === READER_CODES.duplicateSame));
});

Deno.test("readDeepspeedCsv() names a missing folder", async () => {
  await withTempDir(async (dir) => {
    const series = await readDeepspeedCsv(`${dir}/none`);
    assert.equal(series.diagnostics[0].code, READER_CODES.missing);
  });
});
