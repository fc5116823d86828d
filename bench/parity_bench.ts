/**
 * Parity engine performance targets (issue 4): comparing two 10-million-step series must take
 * <= 0.5 s, reading a 1-million-line metrics JSONL file <= 1 s. Run with
 * `deno bench -A bench/parity_bench.ts`.
 *
 * @module
 */

import { readJsonl } from "../src/metrics/jsonl.ts";
import type { MetricSeries } from "../src/metrics/series.ts";
import { compareLane } from "../src/parity/lanes/mod.ts";

const N_COMPARE = 10_000_000;
const N_LINES = 1_000_000;

function series(n: number, perturb: boolean): MetricSeries {
  const steps = new Float64Array(n);
  const loss = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    steps[i] = i + 1;
    const x = 2 + Math.exp(-i / 1e6) + Math.sin(i) * 1e-3;
    loss[i] = perturb ? x * (1 + 1e-12) : x;
  }
  return {
    steps,
    values: { loss },
    present: { loss: new Uint8Array(n).fill(1) },
    events: [],
    diagnostics: [],
  };
}

// Built on first use, so the read benchmark (declared first) runs on a small heap.
let cached: { a: MetricSeries; same: MetricSeries; drifted: MetricSeries } | undefined;
function inputs() {
  cached ??= {
    a: series(N_COMPARE, false),
    same: series(N_COMPARE, false),
    drifted: series(N_COMPARE, true),
  };
  return cached;
}

// A contract-shaped metrics file: full-precision loss, lr and grad_norm on every line.
const dir = await Deno.makeTempDir({ prefix: "parity_bench_" });
const file = `${dir}/metrics.jsonl`;
{
  const lines: string[] = [];
  for (let s = 1; s <= N_LINES; s++) {
    const loss = 2 + Math.exp(-s / 2e5) + Math.sin(s) * 1e-3;
    const lr = 3e-4 * Math.cos(s / N_LINES);
    lines.push(`{"step": ${s}, "loss": ${loss}, "lr": ${lr}, "grad_norm": ${Math.fround(1 / s)}}`);
  }
  await Deno.writeTextFile(file, lines.join("\n") + "\n");
}
globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));

Deno.bench({
  name: "read a 1M-line metrics JSONL file (target <= 1 s)",
  group: "read",
  n: 5,
  warmup: 1,
  fn: async () => {
    const s = await readJsonl(file);
    if (s.steps.length !== N_LINES) throw new Error("expected 1M steps");
  },
});

Deno.bench({
  name: "compare 10M steps, exact lane, identical (target <= 0.5 s)",
  group: "compare",
  n: 5,
  warmup: 1,
  fn: () => {
    const { a, same } = inputs();
    const r = compareLane(a, same, { lane: "exact", window: { from: 1, to: N_COMPARE } });
    if (r.verdict !== "PASS") throw new Error("expected PASS");
  },
});

Deno.bench({
  name: "compare 10M steps, exact lane, every step differs (target <= 0.5 s)",
  group: "compare",
  n: 5,
  warmup: 1,
  fn: () => {
    const { a, drifted } = inputs();
    const r = compareLane(a, drifted, { lane: "exact", window: { from: 1, to: N_COMPARE } });
    if (r.failures !== N_COMPARE) throw new Error("expected every step to differ");
  },
});

Deno.bench({
  name: "compare 10M steps, tolerance lane (target <= 0.5 s)",
  group: "compare",
  n: 5,
  warmup: 1,
  fn: () => {
    const { a, drifted } = inputs();
    const r = compareLane(a, drifted, {
      lane: "tolerance",
      window: { from: 1, to: N_COMPARE },
      rtol: 1e-4,
      atol: 0,
      maxFailures: 0,
    });
    if (r.verdict !== "PASS") throw new Error("expected PASS");
  },
});
