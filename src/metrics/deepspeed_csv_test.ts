import assert from "node:assert/strict";
import { parseDeepspeedCsv, readDeepspeedCsv } from "./deepspeed_csv.ts";
import { readMetrics } from "./read.ts";
import { READER_CODES } from "./series.ts";
import { withTempDir } from "../../test/_testing/metrics_fixtures.ts";

const REAL_CSV = new URL("./testdata/deepspeed_csv", import.meta.url).pathname;
const REAL_JSONL = new URL("./testdata/deepspeed_parity.jsonl", import.meta.url).pathname;

/** The adapter's full-precision losses of the same real run (testdata/README.md). */
async function realLosses(): Promise<number[]> {
  const text = await Deno.readTextFile(REAL_JSONL);
  return text.trim().split("\n").map((line) => JSON.parse(line).loss);
}

Deno.test("readDeepspeedCsv() reads a real csv_monitor folder: resumed writer, sample steps", async () => {
  // DeepSpeed 0.19.8, global batch 8: steps 1-3 by a split, 4-6 by a native resume appending to
  // the same files (the header repeats mid-file).
  const series = await readMetrics(REAL_CSV, {
    format: "deepspeed-csv",
    step_unit: "samples",
    samples_per_step: 8,
  });
  assert.deepEqual([...series.steps], [1, 2, 3, 4, 5, 6]);
  // csv.writer writes repr(float): the monitor's losses are the adapter's, bit for bit.
  assert.deepEqual([...series.values.loss], await realLosses());
  // The engine logs lr after its scheduler stepped: the LR of the *next* step.
  assert.deepEqual([...series.values.lr], [
    0,
    0.00030000000000000003,
    0.0006000000000000001,
    0.0009,
    0.0012000000000000001,
    0.0015,
  ]);
  const repeated = series.diagnostics.find((d) => d.code === READER_CODES.repeatedHeader);
  assert.equal(repeated?.level, "info");
  assert.equal(repeated?.count, 2);
  assert.ok(series.diagnostics.some((d) => d.code === READER_CODES.lossAlias));
  assert.ok(!series.diagnostics.some((d) => d.level === "error"));
});

Deno.test("readDeepspeedCsv() ignores the deepspeed_config.csv a csv_monitor folder may hold", async () => {
  await withTempDir(async (dir) => {
    for await (const entry of Deno.readDir(REAL_CSV)) {
      await Deno.copyFile(`${REAL_CSV}/${entry.name}`, `${dir}/${entry.name}`);
    }
    // The shape newer DeepSpeed writes at initialize (csvMonitor.update_config): key,value rows.
    await Deno.writeTextFile(
      `${dir}/deepspeed_config.csv`,
      "key,value\nzero_stage,2\nfp16,False\noffload_optimizer,None\ntrain_batch_size,8\n",
    );
    const options = { format: "deepspeed-csv", step_unit: "samples", samples_per_step: 8 } as const;
    const withConfig = await readMetrics(dir, options);
    const without = await readMetrics(REAL_CSV, options);
    assert.deepEqual(withConfig, without);
    assert.deepEqual(Object.keys(withConfig.values).sort(), ["loss", "lr", "train_loss"]);
    // Read on its own, the file is not metrics at all: every row is an error.
    const alone = await readMetrics(`${dir}/deepspeed_config.csv`, {
      ...options,
      step_unit: "step",
    });
    assert.ok(alone.diagnostics.some((d) => d.level === "error"));
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
