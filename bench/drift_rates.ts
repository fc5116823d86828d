/**
 * False-alarm and miss rates of the drift lane (docs/parity.md, "The drift lane"): runs
 * `experiments/reference/reshard_long.yaml` (2000 steps, save at 1000, universal reshard 4 → 2
 * ranks) once clean and once per subtle fault for each seed, and tabulates what each of the
 * lane's three tests measured. Faults act only in the resume (`resume.reshard.args.fault`), so
 * per seed the baseline, split and convert run once and are reused from the phase cache.
 *
 *   deno run -A bench/drift_rates.ts [--seeds 1234,11,12,13,14,15,16] [--results DIR]
 *                                    [--steps 2000 --save-at 1000]   # a shorter schedule
 *
 * With `--steps 100 --save-at 50` (the seed experiment's shape) the long window has 40 steps,
 * so the bias test runs on its short blocks (docs/parity.md, "The drift lane").
 *
 * @module
 */

import { join } from "node:path";
import type { ComparisonSummary, RunSummary } from "../src/types/summary.ts";

const PROJECT = join(import.meta.dirname!, "..");
const EXPERIMENT = join(PROJECT, "experiments/reference/reshard_long.yaml");
const FAULTS = ["none", "lr-scaled-on-resume", "weight-decay-dropped", "expert-moments-wrong-rank"];

function option(name: string, fallback: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 && Deno.args[i + 1] ? Deno.args[i + 1] : fallback;
}

const seeds = option("seeds", "1234,11,12,13,14,15,16").split(",").map(Number);
const results = option("results", await Deno.makeTempDir({ prefix: "drift-rates-" }));
const schedule = [
  ...(Deno.args.includes("--steps") ? ["--set", `schedule.steps=${option("steps", "")}`] : []),
  ...(Deno.args.includes("--save-at")
    ? ["--set", `schedule.save_at=${option("save-at", "")}`]
    : []),
];

interface Row {
  fault: string;
  seed: number;
  comparison: ComparisonSummary;
  wall: number;
}

async function run(seed: number, fault: string): Promise<Row> {
  const set = ["--set", `seed=${seed}`, ...schedule];
  if (fault !== "none") set.push("--set", `resume.reshard.args.fault=${fault}`);
  const started = performance.now();
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      join(PROJECT, "src/cli/main.ts"),
      "run",
      EXPERIMENT,
      "--results",
      results,
      "--quiet",
      ...set,
    ],
    stdout: "null",
    stderr: "piped",
  }).output();
  const wall = (performance.now() - started) / 1000;
  const summary: RunSummary = JSON.parse(
    await Deno.readTextFile(join(results, "reshard-long", "latest", "summary.json")),
  );
  const comparison = summary.comparisons.find((c) => c.name === "baseline~resume-reshard");
  if (!comparison || !comparison.drift) {
    throw new Error(
      `seed ${seed} ${fault}: no drift comparison (exit ${out.code})\n` +
        new TextDecoder().decode(out.stderr).slice(-2000),
    );
  }
  return { fault, seed, comparison, wall };
}

const rows: Row[] = [];
for (const seed of seeds) {
  for (const fault of FAULTS) {
    const row = await run(seed, fault);
    rows.push(row);
    const c = row.comparison;
    console.error(
      `seed ${seed} ${fault}: ${c.verdict} at ${c.first_divergent_step ?? "—"} ` +
        `(early ${c.drift!.early_max_ulp32} ULP, envelope ${
          c.drift!.max_envelope_ratio.toFixed(3)
        }, ` +
        `t ${c.drift!.bias_t.toFixed(2)}) ${row.wall.toFixed(1)}s`,
    );
  }
}

const range = (xs: number[], digits = 2) =>
  `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`;
console.log(
  "| fault | runs | FAIL | first divergent step | early max (f32 ULP) | max envelope ratio | bias t | caught by early / envelope / bias alone |",
);
console.log("| --- | ---: | ---: | --- | --- | --- | --- | --- |");
for (const fault of FAULTS) {
  const mine = rows.filter((r) => r.fault === fault);
  const d = mine.map((r) => r.comparison.drift!);
  const fails = mine.filter((r) => r.comparison.verdict === "FAIL").length;
  const steps = [...new Set(mine.map((r) => r.comparison.first_divergent_step ?? "—"))].join(", ");
  const early = d.filter((x) => x.early_max_ulp32 > x.early_limit_ulp32).length;
  const envelope = d.filter((x) => x.max_envelope_ratio > x.envelope_factor).length;
  const bias = d.filter((x) => Math.abs(x.bias_t) > x.bias_limit).length;
  console.log(
    `| ${fault} | ${mine.length} | ${fails} | ${steps} | ${
      range(d.map((x) => x.early_max_ulp32), 0)
    } | ${range(d.map((x) => x.max_envelope_ratio))} | ${
      range(d.map((x) => x.bias_t))
    } | ${early} / ${envelope} / ${bias} |`,
  );
}
