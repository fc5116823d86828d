import assert from "node:assert/strict";
import { parseDeepspeedCsv } from "./deepspeed_csv.ts";
import { parseJsonl, parseJsonlBytes } from "./jsonl.ts";
import { type MetricSeries, READER_CODES } from "./series.ts";

// Which metric is `loss` (docs/parity.md, "Metrics readers"): declared, `loss`, the one alias, or
// none with the candidates said. Hugging Face's TensorBoard callback writes both of these tags.
const HF_RECORDS = '{"step": 1, "train/loss": 2.5, "train/train_loss": 2.4}\n' +
  '{"step": 2, "train/loss": 2.25, "train/train_loss": 2.4}\n';

function hf(loss?: string): MetricSeries {
  return parseJsonlBytes(new TextEncoder().encode(HF_RECORDS), undefined, loss);
}

Deno.test("several loss candidates: none is taken, and the finding names them (no sentence to parse)", () => {
  const series = hf();
  assert.equal(series.values.loss, undefined);
  const finding = series.diagnostics.find((d) => d.code === READER_CODES.lossAmbiguous);
  assert.equal(finding?.level, "error");
  assert.deepEqual(finding?.loss_alias, {
    rule: "ambiguous",
    candidates: ["train/loss", "train/train_loss"],
  });
  assert.ok(series.diagnostics.some((d) => d.code === READER_CODES.missingLoss));
});

Deno.test("metrics.loss names the loss among candidates", () => {
  const named = hf("train/loss");
  assert.deepEqual([...named.values.loss], [2.5, 2.25]);
  const alias = named.diagnostics.find((d) => d.code === READER_CODES.lossAlias);
  assert.deepEqual(alias?.loss_alias, {
    rule: "declared",
    candidates: ["train/loss"],
    chosen: "train/loss",
  });
  assert.ok(!named.diagnostics.some((d) => d.level === "error"));
  const text = '{"step": 1, "loss": 9, "lm_loss": 2.5}\n{"step": 2, "loss": 9, "lm_loss": 2.25}\n';
  assert.deepEqual([...parseJsonl(text).values.loss], [9, 9], "undeclared: loss as logged");
  // A declared name wins over a `loss` the source also has.
  const declared = parseJsonlBytes(new TextEncoder().encode(text), undefined, "lm_loss");
  assert.deepEqual([...declared.values.loss], [2.5, 2.25]);
});

Deno.test("a declared loss the source lacks is missing, said with its name", () => {
  const series = hf("train/lm_loss");
  assert.equal(series.values.loss, undefined);
  const missing = series.diagnostics.find((d) => d.code === READER_CODES.missingLoss);
  assert.match(missing?.message ?? "", /"train\/lm_loss" \(metrics\.loss\)/);
  assert.ok(!series.diagnostics.some((d) => d.code === READER_CODES.lossAmbiguous));
});

Deno.test("one candidate is still taken by the alias rule, and says so (a CSV column)", () => {
  const series = parseDeepspeedCsv([{ name: "a.csv", text: "step,lm loss\n1,2\n2,1.5\n" }], {
    step_unit: "step",
  });
  assert.deepEqual([...series.values.loss], [2, 1.5]);
  const alias = series.diagnostics.find((d) => d.code === READER_CODES.lossAlias);
  assert.deepEqual(alias?.loss_alias, {
    rule: "alias",
    candidates: ["lm loss"],
    chosen: "lm loss",
  });
});
