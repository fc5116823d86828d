/**
 * The harness's planner against DeepSpeed's installed `plan_transfer`, measured side by side in one
 * run on identical maps, their plans compared segment for segment.
 *
 * Moonlight-16B-A3B scenarios (78 expert parameters: layers 1–26, 64 experts, `w1`/`w3`
 * `[64, 1408, 2048]`, `w2` `[64, 2048, 1408]`):
 *
 * - s1: EP 4 (16 contiguous experts per rank, plus experts 0 and 1 on every rank, kept first in
 *   local order) → EP 8 contiguous;
 * - s2: EP 8 contiguous → EP 4 contiguous;
 * - s3: EP 4 strided (rank r holds experts e with e % 4 == r) → EP 8 contiguous.
 *
 * DeepSeek-V3 scenarios (174 expert parameters: 58 MoE layers 3–60, 256 experts, `w1`/`w3`
 * `[256, 2048, 7168]`, `w2` `[256, 7168, 2048]`):
 *
 * - v3: EP 64 contiguous (4 experts per rank) → EP 32 contiguous;
 * - v3-redundant: EP 64 with one redundant expert slot per rank, EPLB style (rank r also holds a
 *   copy of expert 4·((r + 32) mod 64), the first expert of the opposite rank, so 64 experts have
 *   two holders) → EP 32 contiguous.
 *
 * Both plan with `first_holder` (DeepSpeed: no selector); s1 and v3-redundant, whose sources
 * have replicas, also with `highest_holder` (DeepSpeed: a `replica_selector` returning the highest
 * candidate rank). Scaling series: one `[E, 1408, 2048]` parameter, strided EP E/16 → contiguous
 * EP E/8, for E up to 8192, with a budget raised on both sides so neither refuses the larger sizes.
 *
 *   deno bench -A bench/affine_scaling_bench.ts                          # harness timings
 *   deno run -A --v8-flags=--expose-gc bench/affine_scaling_bench.ts     # side by side
 *
 * The side-by-side run takes `--timeout-s` (the cap on one DeepSpeed run, default 60),
 * `--budget-s` (DeepSpeed seconds per row before no further round starts, default 60) and
 * `--rounds` (most rounds per row, default 5). Each round runs DeepSpeed once, then the harness
 * for at least 5 plans and 200 ms, so both see the same machine load.
 *
 * @module
 */

import process from "node:process";
import { parseArgs } from "node:util";
import {
  firstHolder,
  highestHolder,
  makePlacement,
  placementToMap,
  planTransfers,
} from "../src/affine/mod.ts";
import type {
  MapPair,
  PlacementDescriptor,
  PlanBudget,
  ReplicaPolicy,
  TransferSegmentDict,
} from "../src/affine/mod.ts";
import {
  deepspeedAvailable,
  DeepSpeedTimerError,
  firstSegmentDifference,
  NO_VENV_SENTENCE,
  startDeepSpeedTimer,
} from "./_deepspeed_timer.ts";
import type { DeepSpeedTimer, SelectorName } from "./_deepspeed_timer.ts";

const EXPERTS = 64, HIDDEN = 2048, INTERMEDIATE = 1408;
const V3_EXPERTS = 256, V3_HIDDEN = 7168, V3_INTERMEDIATE = 2048;

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

/** Source and target placement of one map set. */
export interface PlacementPair {
  /** The layout the bytes are in now. */
  source: PlacementDescriptor;
  /** The layout they are to be in. */
  target: PlacementDescriptor;
}

/** The placements of one scenario (s1, s2, s3, v3, v3-redundant). */
export function scenarioPlacements(scenario: string): PlacementPair {
  const ep8 = makePlacement(EXPERTS, contiguous(EXPERTS, 8));
  const ep4 = makePlacement(EXPERTS, contiguous(EXPERTS, 4));
  const v3ep32 = makePlacement(V3_EXPERTS, contiguous(V3_EXPERTS, 32));
  switch (scenario) {
    case "s1":
      return {
        source: makePlacement(EXPERTS, withHot(contiguous(EXPERTS, 4), [0, 1])),
        target: ep8,
      };
    case "s2":
      return { source: ep8, target: ep4 };
    case "s3":
      return { source: makePlacement(EXPERTS, strided(EXPERTS, 4)), target: ep8 };
    case "v3":
      return { source: makePlacement(V3_EXPERTS, contiguous(V3_EXPERTS, 64)), target: v3ep32 };
    case "v3-redundant":
      return {
        source: makePlacement(
          V3_EXPERTS,
          contiguous(V3_EXPERTS, 64).map((own, r) => [...own, 4 * ((r + 32) % 64)]),
        ),
        target: v3ep32,
      };
  }
  throw new Error(`unknown scenario ${scenario}`);
}

/** The expert parameters of a scenario's model with their logical shapes. */
function expertShapes(scenario: string): Map<string, number[]> {
  const v3 = scenario.startsWith("v3");
  const [first, last] = v3 ? [3, 60] : [1, 26];
  const [experts, hidden, inter] = v3
    ? [V3_EXPERTS, V3_HIDDEN, V3_INTERMEDIATE]
    : [EXPERTS, HIDDEN, INTERMEDIATE];
  const shapes = new Map<string, number[]>();
  for (let layer = first; layer <= last; layer++) {
    for (const w of ["w1", "w2", "w3"]) {
      shapes.set(
        `model.layers.${layer}.mlp.experts.${w}`,
        w === "w2" ? [experts, hidden, inter] : [experts, inter, hidden],
      );
    }
  }
  return shapes;
}

/** The map pairs of one scenario (78 for Moonlight, 174 for DeepSeek-V3). */
export function scenarioPairs(scenario: string): Map<string, MapPair> {
  const { source, target } = scenarioPlacements(scenario);
  const pairs = new Map<string, MapPair>();
  for (const [name, shape] of expertShapes(scenario)) {
    pairs.set(name, {
      source: placementToMap(source, shape),
      target: placementToMap(target, shape),
    });
  }
  return pairs;
}

/** The placements of the scaling series' parameter at size `experts`. */
export function scalingPlacements(experts: number): PlacementPair {
  return {
    source: makePlacement(experts, strided(experts, experts / 16)),
    target: makePlacement(experts, contiguous(experts, experts / 8)),
  };
}

/** One `[E, 1408, 2048]` parameter, strided EP E/16 → contiguous EP E/8. */
export function scalingPair(experts: number): Map<string, MapPair> {
  const shape = [experts, INTERMEDIATE, HIDDEN];
  const { source, target } = scalingPlacements(experts);
  return new Map([["w1", {
    source: placementToMap(source, shape),
    target: placementToMap(target, shape),
  }]]);
}

/**
 * The scaling series' budget, given to both planners: from E = 1024 on, E source pieces squared
 * exceed both defaults' `maxPairChecks` (DeepSpeed squares every piece of a map in
 * `_validate_holders`, the harness the distinct regions), and E = 8192 exceeds `maxPiecesPerMap`.
 */
export const SCALING_BUDGET: Partial<PlanBudget> = {
  maxPiecesPerMap: 1 << 20,
  maxPairChecks: 2 ** 40,
};

const POLICIES: Record<SelectorName, ReplicaPolicy> = {
  first_holder: firstHolder,
  highest_holder: highestHolder,
};

function plan(pairs: Map<string, MapPair>, budget?: Partial<PlanBudget>, policy = firstHolder) {
  return planTransfers(pairs, { policy, elementSize: 2, budget });
}

const SCENARIOS = ["s1", "s2", "s3", "v3", "v3-redundant"];
/** The scenarios whose sources have replicas, planned with both selectors. */
const REPLICATED = new Set(["s1", "v3-redundant"]);
const selectorsOf = (scenario: string): SelectorName[] =>
  REPLICATED.has(scenario) ? ["first_holder", "highest_holder"] : ["first_holder"];

const scenarios = new Map(SCENARIOS.map((s) => [s, scenarioPairs(s)]));
for (const [name, pairs] of scenarios) {
  for (const selector of selectorsOf(name)) {
    Deno.bench(
      `plan ${name} (${pairs.size} parameters, ${selector})`,
      { group: "scenarios" },
      () => {
        plan(pairs, undefined, POLICIES[selector]);
      },
    );
  }
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

// ---------------------------------------------------------------------------------------------
// Side by side

/** Median, min and max of a list of milliseconds. */
interface Spread {
  median: number;
  min: number;
  max: number;
  n: number;
}

function spread(values: readonly number[]): Spread {
  const v = [...values].sort((a, b) => a - b);
  return { median: v[v.length >> 1], min: v[0], max: v[v.length - 1], n: v.length };
}

/** Harness plans for at least 5 runs and `minMs`: wall times and CPU ms in total. */
function harnessRuns(f: () => void, minMs: number): { times: number[]; cpu: number } {
  const times: number[] = [];
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  while (times.length < 5 || performance.now() - start < minMs) {
    const t = performance.now();
    f();
    times.push(performance.now() - t);
  }
  const cpu = process.cpuUsage(cpu0);
  return { times, cpu: (cpu.user + cpu.system) / 1000 };
}

/** One row of the side-by-side tables. */
interface Row {
  deepspeed: Spread | null;
  deepspeedCpu: Spread | null;
  /** The cap, when DeepSpeed's run was stopped at it. */
  timedOutAfterS: number | null;
  harness: Spread;
  harnessCpuPerPlan: number;
  segments: number;
  /** null: equal; a sentence: the first difference; "not compared": DeepSpeed did not finish. */
  difference: string | null;
  /** The smaller size whose DeepSpeed run hit the cap, when DeepSpeed was not run for this one. */
  notRunAfter?: number;
}

interface SideBySideOptions {
  /** Cap on one DeepSpeed run, in seconds. */
  timeoutS: number;
  /** DeepSpeed seconds per row after which no further round starts. */
  budgetS: number;
  /** Most rounds per row. */
  rounds: number;
}

/**
 * Times DeepSpeed and the harness in alternation on one loaded map set and compares the plans of
 * DeepSpeed's first run with the harness's.
 */
async function sideBySide(
  ds: DeepSpeedTimer,
  id: string,
  pairs: Map<string, MapPair>,
  selector: SelectorName,
  budget: Partial<PlanBudget> | undefined,
  options: SideBySideOptions,
): Promise<Row> {
  const policy = POLICIES[selector];
  const run = () => plan(pairs, budget, policy);
  const ours = run();
  const segments = [...ours.parameters.values()].reduce((n, p) => n + p.segments.length, 0);
  (globalThis as { gc?: () => void }).gc?.();
  harnessRuns(run, 1000); // warm-up
  const dsWall: number[] = [], dsCpu: number[] = [], hTimes: number[] = [];
  let hCpu = 0, timedOutAfterS: number | null = null;
  const measureHarness = () => {
    (globalThis as { gc?: () => void }).gc?.();
    const h = harnessRuns(run, 500);
    hTimes.push(...h.times);
    hCpu += h.cpu;
  };
  let difference: string | null = "not compared";
  for (let round = 0; round < options.rounds; round++) {
    let t;
    try {
      t = await ds.time(id, selector, { timeoutS: options.timeoutS, segments: round === 0 });
    } catch (e) {
      // DeepSpeed refused a map the harness planned: a disagreement, shown in the row.
      if (!(e instanceof DeepSpeedTimerError) || e.parameter === undefined) throw e;
      difference = `parameter ${e.parameter}: the harness planned it, ${e.message}`;
      break;
    }
    if (t.timedOut) {
      timedOutAfterS = options.timeoutS;
    } else {
      dsWall.push(t.runs[0].wall_ms);
      dsCpu.push(t.runs[0].cpu_ms);
      if (t.segments) {
        const harness = new Map<string, TransferSegmentDict[]>();
        for (const [name, p] of ours.parameters) harness.set(name, p.segments);
        difference = firstSegmentDifference(harness, t.segments);
      }
    }
    measureHarness();
    const spent = dsWall.reduce((a, b) => a + b, 0);
    if (t.timedOut || spent + dsWall[dsWall.length - 1] > options.budgetS * 1000) break;
  }
  if (hTimes.length === 0) measureHarness();
  return {
    deepspeed: dsWall.length > 0 ? spread(dsWall) : null,
    deepspeedCpu: dsCpu.length > 0 ? spread(dsCpu) : null,
    timedOutAfterS,
    harness: spread(hTimes),
    harnessCpuPerPlan: hCpu / hTimes.length,
    segments,
    difference,
  };
}

const ms = (v: number) =>
  v >= 1000
    ? `${(v / 1000).toFixed(v >= 10000 ? 1 : 2)} s`
    : v >= 100
    ? v.toFixed(0)
    : v >= 10
    ? v.toFixed(1)
    : v.toFixed(2);
const range = (s: Spread) => `${ms(s.median)} (${ms(s.min)} … ${ms(s.max)})`;
const times = (r: number) => (r >= 100 ? `${r.toFixed(0)}×` : `${r.toFixed(1)}×`);
const load = () => Deno.loadavg().map((l) => l.toFixed(1)).join(" ");

function deepspeedCells(row: Row): string[] {
  if (row.notRunAfter !== undefined) {
    return [`not run (E=${row.notRunAfter} hit the cap)`, "–", "0"];
  }
  if (row.deepspeed === null && row.timedOutAfterS === null) return ["refused", "–", "0"];
  if (row.deepspeed === null) return [`> ${row.timedOutAfterS} s (stopped)`, "–", "0"];
  return [range(row.deepspeed), ms(row.deepspeedCpu!.median), String(row.deepspeed.n)];
}

function ratioCells(row: Row): string[] {
  if (row.notRunAfter !== undefined) return ["–", "–", "–"];
  if (row.deepspeed === null && row.timedOutAfterS === null) return ["–", "–", "–"];
  if (row.deepspeed === null) {
    return [`> ${times((row.timedOutAfterS! * 1000) / row.harness.median)}`, "–", "–"];
  }
  return [
    times(row.deepspeed.median / row.harness.median),
    times(row.deepspeedCpu!.median / row.harnessCpuPerPlan),
    times(row.deepspeed.min / row.harness.min),
  ];
}

function equalCell(row: Row): string {
  return row.difference === null ? "equal" : row.difference === "not compared" ? "–" : "DIFFERENT";
}

/** Prints the side-by-side tables behind docs/PERFORMANCE.md; returns the exit code. */
async function report(): Promise<number> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      "timeout-s": { type: "string", default: "300" },
      "series-timeout-s": { type: "string", default: "120" },
      "budget-s": { type: "string", default: "60" },
      "rounds": { type: "string", default: "5" },
    },
  });
  const options: SideBySideOptions = {
    timeoutS: Number(values["timeout-s"]),
    budgetS: Number(values["budget-s"]),
    rounds: Number(values.rounds),
  };
  const seriesOptions = { ...options, timeoutS: Number(values["series-timeout-s"]) };
  if (
    ![...Object.values(options), seriesOptions.timeoutS].every((v) => Number.isFinite(v) && v > 0)
  ) {
    console.error("--timeout-s, --series-timeout-s, --budget-s and --rounds take positive numbers");
    return 2;
  }
  if (!deepspeedAvailable()) {
    console.error(NO_VENV_SENTENCE);
    return 3;
  }
  let ds: DeepSpeedTimer;
  try {
    ds = await startDeepSpeedTimer();
  } catch (e) {
    console.error(e instanceof DeepSpeedTimerError ? e.message : String(e));
    return 3;
  }
  const failures: string[] = [];
  const check = (what: string, row: Row) => {
    if (row.difference !== null && row.difference !== "not compared") {
      failures.push(`${what}: ${row.difference}`);
    }
  };
  try {
    console.log(
      `DeepSpeed ${ds.versions.deepspeed} (Python ${ds.versions.python}) against the harness ` +
        `(Deno ${Deno.version.deno}), ${
          new Date().toISOString()
        }, ${navigator.hardwareConcurrency} ` +
        `CPUs, load average ${load()}; cap on one DeepSpeed run ${options.timeoutS} s ` +
        `(scaling series ${seriesOptions.timeoutS} s).\n`,
    );
    console.log(
      "| scenario | parameters | selector | segments | DeepSpeed median ms (min … max) | " +
        "DeepSpeed CPU ms | DeepSpeed runs | harness median ms (min … max) | harness CPU ms | " +
        "speed-up (median) | speed-up (CPU) | speed-up (best) | plans |",
    );
    console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (const [name, pairs] of scenarios) {
      const p = scenarioPlacements(name);
      const placements = new Map([...pairs.keys()].map((k) => [k, p]));
      const { loweringDiffers } = await ds.load(name, pairs, { placements });
      if (loweringDiffers.length > 0) {
        failures.push(
          `${name}: the harness's maps differ from DeepSpeed's autoep_placement_to_affine_map ` +
            `for ${loweringDiffers.slice(0, 3).join(", ")}`,
        );
      }
      for (const selector of selectorsOf(name)) {
        const row = await sideBySide(ds, name, pairs, selector, undefined, options);
        check(`${name} (${selector})`, row);
        console.log(
          `| ${name} | ${pairs.size} | ${selector} | ${row.segments} | ` +
            `${deepspeedCells(row).join(" | ")} | ${range(row.harness)} | ` +
            `${ms(row.harnessCpuPerPlan)} | ${ratioCells(row).join(" | ")} | ${equalCell(row)} |`,
        );
      }
    }
    console.log(`\nload average ${load()}\n`);
    console.log(
      "| E | source / target pieces | segments | DeepSpeed median ms (min … max) | " +
        "DeepSpeed CPU ms | DeepSpeed runs | harness median ms (min … max) | harness CPU ms | " +
        "harness CPU µs per piece | speed-up (median) | speed-up (CPU) | speed-up (best) | plans |",
    );
    console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    const cpu = new Map<number, number>(), best = new Map<number, number>();
    let stoppedAt: number | null = null;
    for (const experts of SCALING_SIZES) {
      const pairs = seriesPair(experts);
      const id = `E=${experts}`;
      const p = scalingPlacements(experts);
      // DeepSpeed's work grows with E, so once one size hits the cap, larger ones run harness-only.
      const dsOptions = stoppedAt === null ? seriesOptions : { ...seriesOptions, rounds: 0 };
      if (stoppedAt === null) {
        await ds.load(id, pairs, { budget: SCALING_BUDGET, placements: new Map([["w1", p]]) });
      }
      const row = await sideBySide(ds, id, pairs, "first_holder", SCALING_BUDGET, dsOptions);
      if (stoppedAt === null && row.timedOutAfterS !== null) stoppedAt = experts;
      if (stoppedAt !== null && stoppedAt !== experts) row.notRunAfter = stoppedAt;
      check(id, row);
      cpu.set(experts, row.harnessCpuPerPlan);
      best.set(experts, row.harness.min);
      console.log(
        `| ${experts} | ${experts} / ${experts / 8} | ${row.segments} | ` +
          `${deepspeedCells(row).join(" | ")} | ${range(row.harness)} | ` +
          `${ms(row.harnessCpuPerPlan)} | ${
            ((row.harnessCpuPerPlan * 1000) / experts).toFixed(2)
          } | ` +
          `${ratioCells(row).join(" | ")} | ${equalCell(row)} |`,
      );
    }
    const top = SCALING_SIZES[SCALING_SIZES.length - 1];
    console.log(
      `\nharness growth E=1024 → ${top} (${top / 1024}× the pieces): CPU per plan ` +
        `${(cpu.get(top)! / cpu.get(1024)!).toFixed(1)}×, best run ` +
        `${(best.get(top)! / best.get(1024)!).toFixed(1)}×; load average ${load()}`,
    );
  } catch (e) {
    if (!(e instanceof DeepSpeedTimerError)) throw e;
    console.error(e.parameter ? `${e.message} (parameter ${e.parameter})` : e.message);
    return 3;
  } finally {
    await ds.close();
  }
  if (failures.length > 0) {
    console.error("\nThe planners disagree:");
    for (const f of failures) console.error(`- ${f}`);
    return 1;
  }
  console.log("\nEvery plan compared is DeepSpeed's segment for segment.");
  return 0;
}

if (import.meta.main) Deno.exit(await report());
