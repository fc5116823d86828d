import assert from "node:assert/strict";
import { parseJsonl } from "../metrics/mod.ts";
import { diffSeries } from "./metrics_diff.ts";

const jsonl = (...records: object[]) =>
  parseJsonl(records.map((r) => JSON.stringify(r)).join("\n"));

Deno.test("diffSeries: identical, one ULP apart, and a missing step", () => {
  const a = jsonl({ step: 1, loss: 0.1 }, { step: 2, loss: 0.2, lr: 1 });
  assert.equal(diffSeries(a, a).first_differing_step, null);
  const ulp = jsonl({ step: 1, loss: 0.1 }, { step: 2, loss: 0.20000000000000004, lr: 1 });
  assert.deepEqual(diffSeries(a, ulp), {
    steps: 2,
    first_differing_step: 2,
    metric: "loss",
    stored: 0.2,
    rerun: 0.20000000000000004,
  });
  const short = jsonl({ step: 1, loss: 0.1 });
  assert.equal(diffSeries(a, short).first_differing_step, 2);
  assert.equal(diffSeries(a, short).rerun, null);
});
