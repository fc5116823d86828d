/**
 * The DeepSpeed hook's metrics writer (`parity_hooks.deepspeed`, its core needing only the standard
 * library), run with the machine's python3 on the package's source folder: what it writes is read
 * back by the harness's strict JSONL reader with full precision, events and no diagnostics, and a
 * non-finite loss becomes a diagnosed value instead of invalid JSON.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { readMetrics } from "../src/metrics/mod.ts";
import { readExperimentFile } from "../src/experiment/mod.ts";
import { PROJECT } from "./_testing/cli_harness.ts";

const SCRIPT = `
import sys
sys.path.insert(0, sys.argv[1])
from parity_hooks.deepspeed import Parity
p = Parity.from_env()
assert p.stop_at == 3 and p.save_at == 2 and p.load_location() == ("/ckpt", "global_step2")
for step in range(1, p.stop_at + 1):
    p.step(step, loss=1.0 / 3.0 + step, lr=0.1 * step)
    if step == p.save_at:
        p.saved(step, digests={"params": "abc"}, micro_step=step * 16, grad_accum=16)
p.step(4, loss=float("nan"))
`;

Deno.test("parity_hooks.deepspeed writes full-precision JSONL the harness reads back", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const metrics = join(dir, "m", "metrics.jsonl");
    const out = await new Deno.Command("python3", {
      args: ["-c", SCRIPT, join(PROJECT, "hooks")],
      env: {
        PARITY_METRICS_FILE: metrics,
        PARITY_STEPS: "3",
        PARITY_STOP_AT: "",
        PARITY_SAVE_AT: "2",
        PARITY_RESUME_FROM: "/ckpt/global_step2/",
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    const series = await readMetrics(metrics, { format: "jsonl" });
    assert.deepEqual([...series.steps], [1, 2, 3, 4]);
    assert.equal(series.values.loss[1], 1 / 3 + 2, "loss keeps every bit");
    assert.equal(series.values.lr[2], 0.1 * 3);
    const saved = series.events.find((e) => e.event === "saved")!;
    assert.equal(saved.step, 2);
    assert.deepEqual(saved.fields.digests, { params: "abc" });
    assert.equal(saved.fields.micro_step, 32);
    assert.ok(
      series.diagnostics.some((d) => d.level === "error" && d.step === 4),
      "NaN is diagnosed",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("experiments/deepspeed/autoep_resume.yaml is a valid experiment", async () => {
  const result = await readExperimentFile(
    join(PROJECT, "experiments/deepspeed/autoep_resume.yaml"),
  );
  assert.ok(result.ok, JSON.stringify(!result.ok && result.errors));
});
