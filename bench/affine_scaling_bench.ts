/**
 * Planner speed against DeepSpeed's own `plan_transfer`, on the layouts of the planner-speed issue,
 * with DeepSpeed's measured figures printed beside ours as reference.
 *
 * Scenarios (78 expert parameters of a Moonlight-16B-A3B-sized model: layers 1–26, 64 experts,
 * `w1`/`w3` `[64, 1408, 2048]`, `w2` `[64, 2048, 1408]`; policy `first_holder`, bf16):
 *
 * - s1: EP 4 (16 contiguous experts per rank, plus experts 0 and 1 on every rank, kept first in
 *   local order) → EP 8 contiguous;
 * - s2: EP 8 contiguous → EP 4 contiguous;
 * - s3: EP 4 strided (rank r holds experts e with e % 4 == r) → EP 8 contiguous.
 *
 * Scaling series: one parameter `[E, 1408, 2048]`, strided EP E/16 → contiguous EP E/8, for E up to
 * 8192, with a budget raised so DeepSpeed's limits do not refuse the larger sizes.
 *
 *   deno bench -A bench/affine_scaling_bench.ts                          # timings (deno bench)
 *   deno run -A --v8-flags=--expose-gc bench/affine_scaling_bench.ts     # table vs DeepSpeed
 *
 * @module
 */

import process from "node:process";
import { makePlacement, placementToMap, planTransfers } from "../src/affine/mod.ts";
import type { MapPair, PlacementDescriptor, PlanBudget } from "../src/affine/mod.ts";
import { firstHolder } from "../src/affine/mod.ts";

const EXPERTS = 64, HIDDEN = 2048, INTERMEDIATE = 1408;

/** DeepSpeed's Python `plan_transfer` over the 78 parameters, in ms (from the issue). */
export const DEEPSPEED_SCENARIO_MS: Readonly<Record<string, number>> = {
  s1: 60,
  s2: 43,
  s3: 1222,
};

/** DeepSpeed's Python `plan_transfer` for one `[E, 1408, 2048]` parameter, in ms (from the issue). */
export const DEEPSPEED_SCALING_MS: Readonly<Record<number, number>> = {
  64: 15.5,
  256: 233,
  1024: 5100,
  2048: 22300,
};

/** The sizes of the scaling series. */
export const SCALING_SIZES = [64, 256, 1024, 2048, 4096, 8192];

function contiguous(experts: number, ranks: number): number[][] {
  const per = experts / ranks;
  return Array.from(
    { length: ranks },
    (_, r) => Array.from({ length: per }, (_, i) => r * per + i),
  );
}

function strided(experts: number, ranks: number): number[][] {
  return Array.from(
    { length: ranks },
    (_, r) => Array.from({ length: experts / ranks }, (_, i) => i * ranks + r),
  );
}

function withHot(byRank: number[][], hot: number[]): number[][] {
  return byRank.map((own) => [...hot, ...own.filter((e) => !hot.includes(e))]);
}

/** The placements of one scenario. */
export function scenarioPlacements(
  scenario: string,
): { source: PlacementDescriptor; target: PlacementDescriptor } {
  const ep8 = makePlacement(EXPERTS, contiguous(EXPERTS, 8));
  const ep4 = makePlacement(EXPERTS, contiguous(EXPERTS, 4));
  if (scenario === "s1") {
    return { source: makePlacement(EXPERTS, withHot(contiguous(EXPERTS, 4), [0, 1])), target: ep8 };
  }
  if (scenario === "s2") return { source: ep8, target: ep4 };
  if (scenario === "s3") {
    return { source: makePlacement(EXPERTS, strided(EXPERTS, 4)), target: ep8 };
  }
  throw new Error(`unknown scenario ${scenario}`);
}

/** The 78 map pairs of one scenario. */
export function scenarioPairs(scenario: string): Map<string, MapPair> {
  const { source, target } = scenarioPlacements(scenario);
  const pairs = new Map<string, MapPair>();
  for (let layer = 1; layer <= 26; layer++) {
    for (const w of ["w1", "w2", "w3"]) {
      const shape = w === "w2" ? [EXPERTS, HIDDEN, INTERMEDIATE] : [EXPERTS, INTERMEDIATE, HIDDEN];
      pairs.set(`model.layers.${layer}.mlp.experts.${w}`, {
        source: placementToMap(source, shape),
        target: placementToMap(target, shape),
      });
    }
  }
  return pairs;
}

/** One `[E, 1408, 2048]` parameter, strided EP E/16 → contiguous EP E/8. */
export function scalingPair(experts: number): Map<string, MapPair> {
  const shape = [experts, INTERMEDIATE, HIDDEN];
  return new Map([["w1", {
    source: placementToMap(makePlacement(experts, strided(experts, experts / 16)), shape),
    target: placementToMap(makePlacement(experts, contiguous(experts, experts / 8)), shape),
  }]]);
}

/** A budget DeepSpeed's limits leave room under at every size of the series. */
export const SCALING_BUDGET: Partial<PlanBudget> = {
  maxPiecesPerMap: 1 << 20,
  maxPairChecks: 2 ** 40,
};

function plan(pairs: Map<string, MapPair>, budget?: Partial<PlanBudget>) {
  return planTransfers(pairs, { policy: firstHolder, elementSize: 2, budget });
}

const scenarios = new Map(["s1", "s2", "s3"].map((s) => [s, scenarioPairs(s)]));
for (const [name, pairs] of scenarios) {
  Deno.bench(`plan ${name} (78 parameters, first_holder)`, { group: "scenarios" }, () => {
    plan(pairs);
  });
}
// Built on first use, so the scenarios are not timed while the collector settles these maps.
const series = new Map<number, Map<string, MapPair>>();
const seriesPair = (experts: number) => {
  let pairs = series.get(experts);
  if (pairs === undefined) series.set(experts, pairs = scalingPair(experts));
  return pairs;
};
for (const experts of SCALING_SIZES) {
  Deno.bench(`plan one [${experts}, 1408, 2048] parameter`, { group: "scaling" }, () => {
    plan(seriesPair(experts), SCALING_BUDGET);
  });
}

/**
 * Runs `f` for about `minMs` after as long a warm-up. Wall times in ms, plus the process's CPU
 * time per run (GC helper threads included), which other load on the machine inflates far less.
 */
function timed(
  f: () => void,
  minMs: number,
): { median: number; min: number; max: number; cpu: number } {
  // A full collection first (with --expose-gc), so no benchmark pays for the previous one's heap.
  (globalThis as { gc?: () => void }).gc?.();
  const warm = performance.now();
  while (performance.now() - warm < minMs) f();
  const times: number[] = [];
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  while (times.length < 5 || (performance.now() - start < minMs && times.length < 500)) {
    const t = performance.now();
    f();
    times.push(performance.now() - t);
  }
  const cpu = process.cpuUsage(cpu0);
  times.sort((a, b) => a - b);
  return {
    median: times[times.length >> 1],
    min: times[0],
    max: times[times.length - 1],
    cpu: (cpu.user + cpu.system) / 1000 / times.length,
  };
}

const ms = (v: number) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));

/** Prints the tables behind docs/PERFORMANCE.md. */
function report(): void {
  console.log(
    "| scenario | DeepSpeed ms | ours median ms (min … max) | CPU ms | speed-up (median) |",
  );
  console.log("|---|---|---|---|---|");
  for (const [name, pairs] of scenarios) {
    const t = timed(() => plan(pairs), 1000);
    const ds = DEEPSPEED_SCENARIO_MS[name];
    console.log(
      `| ${name} | ${ds} | ${ms(t.median)} (${ms(t.min)} … ${ms(t.max)}) | ${ms(t.cpu)} | ` +
        `${(ds / t.median).toFixed(0)}× |`,
    );
  }
  console.log(
    "\n| E | DeepSpeed ms | ours median ms (min … max) | CPU ms | speed-up (median) | segments |",
  );
  console.log("|---|---|---|---|---|---|");
  const medians = new Map<number, number>();
  for (const experts of SCALING_SIZES) {
    const pairs = seriesPair(experts);
    const t = timed(() => plan(pairs, SCALING_BUDGET), 1000);
    medians.set(experts, t.median);
    const ds = DEEPSPEED_SCALING_MS[experts];
    const segments = plan(pairs, SCALING_BUDGET).parameters.get("w1")!.segments.length;
    console.log(
      `| ${experts} | ${ds ?? "–"} | ${ms(t.median)} (${ms(t.min)} … ${ms(t.max)}) | ` +
        `${ms(t.cpu)} | ` +
        `${ds ? `${(ds / t.median).toFixed(0)}×` : "–"} | ${segments} |`,
    );
  }
  const growth = medians.get(8192)! / medians.get(1024)!;
  console.log(`\ngrowth E=1024 → 8192 (8× the pieces), medians: ${growth.toFixed(1)}×`);
}

if (import.meta.main) report();
