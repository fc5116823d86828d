/**
 * Plan-sync benchmark at Moonlight size: 27 MoE layers × 64 experts × 3 weights, EP 4 → EP 8
 * with replicated experts, per policy (plan time, verify time, memory, traffic), plus the
 * verification of a 1,000,000-segment plan.
 *
 * Shapes are Moonlight-16B-A3B's real expert shapes (hidden 2048, MoE intermediate 1408, bf16):
 * `w1`, `w3` are `[64, 1408, 2048]` and `w2` is `[64, 2048, 1408]` per layer (81 parameters, 15.5 G
 * elements, 31 GB in bf16). Planning and verification never touch elements, so the real sizes
 * cost nothing but make the byte figures real.
 *
 * Layout: source EP 4, rank r holds experts 16r..16r+15 plus the hot experts 0..7 on every rank
 * (4 holders each); target EP 8, rank r holds experts 8r..8r+7 plus experts 0..3 on every rank.
 * Location r is process r on both sides, so source and target ranks 0..3 share processes.
 *
 *   deno bench -A bench/affine_bench.ts                  # timings (deno bench)
 *   deno run -A --v8-flags=--expose-gc bench/affine_bench.ts   # report table with memory
 *
 * @module
 */

import {
  buildPlanFile,
  getReplicaPolicy,
  makePlacement,
  placementToMap,
  planTransfers,
  verifyPlan,
} from "../src/affine/mod.ts";
import type { MapPair, PlanFile } from "../src/affine/mod.ts";

const LAYERS = 27, EXPERTS = 64, HIDDEN = 2048, INTERMEDIATE = 1408, ELEMENT_SIZE = 2;
const POLICIES = ["first_holder", "highest_holder", "local_first_least_loaded", "balanced"];

function sourcePlacement() {
  return makePlacement(
    EXPERTS,
    Array.from({ length: 4 }, (_, r) => {
      const own = Array.from({ length: 16 }, (_, i) => 16 * r + i);
      const hot = [0, 1, 2, 3, 4, 5, 6, 7].filter((e) => !own.includes(e));
      return [...hot, ...own];
    }),
  );
}

function targetPlacement() {
  return makePlacement(
    EXPERTS,
    Array.from({ length: 8 }, (_, r) => {
      const own = Array.from({ length: 8 }, (_, i) => 8 * r + i);
      return [...[0, 1, 2, 3].filter((e) => !own.includes(e)), ...own];
    }),
  );
}

/** The 81 map pairs of one Moonlight-sized sync. */
export function moonlightPairs(): Map<string, MapPair> {
  const src = sourcePlacement(), tgt = targetPlacement();
  const pairs = new Map<string, MapPair>();
  for (let layer = 1; layer <= LAYERS; layer++) {
    for (const w of ["w1", "w2", "w3"]) {
      const shape = w === "w2" ? [EXPERTS, HIDDEN, INTERMEDIATE] : [EXPERTS, INTERMEDIATE, HIDDEN];
      pairs.set(`model.layers.${layer}.mlp.experts.${w}`, {
        source: placementToMap(src, shape),
        target: placementToMap(tgt, shape),
      });
    }
  }
  return pairs;
}

const processes = {
  sourceProcesses: Object.fromEntries(Array.from({ length: 4 }, (_, r) => [String(r), r])),
  targetProcesses: Object.fromEntries(Array.from({ length: 8 }, (_, r) => [String(r), r])),
};

/** Plans the Moonlight sync with one policy and returns the plan file. */
export function planMoonlight(policy: string, pairs = moonlightPairs()): PlanFile {
  const plans = planTransfers(pairs, {
    ...processes,
    elementSize: ELEMENT_SIZE,
    policy: getReplicaPolicy(policy),
    minSplitBytes: 1 << 20,
  });
  return buildPlanFile(plans, { policy, pairs, ...processes });
}

/**
 * A valid plan of exactly `segments` one-row segments: a `[segments, 16]` parameter split over
 * 4 source ranks and 8 target ranks, every row copied by its own segment.
 */
export function millionSegmentPlan(segments = 1_000_000): PlanFile {
  const cols = 16, rows = segments;
  const split = (parts: number) => {
    const per = rows / parts;
    return {
      logical_shape: [rows, cols],
      ranks: Object.fromEntries(Array.from({ length: parts }, (_, r) => [String(r), {
        shard_shape: [per, cols],
        pieces: [{
          shape: [per, cols],
          source: [r * per * cols, [cols, 1]],
          dest: [0, [cols, 1]],
          locations: [r],
        }],
      }])),
    };
  };
  const list = new Array(rows);
  const srcPer = rows / 4, tgtPer = rows / 8;
  for (let row = 0; row < rows; row++) {
    list[row] = {
      shape: [1, cols],
      source: [Math.floor(row / srcPer), (row % srcPer) * cols, [cols, 1]],
      target: [Math.floor(row / tgtPer), (row % tgtPer) * cols, [cols, 1]],
    };
  }
  return {
    schema_version: 1,
    policy: "synthetic",
    source_processes: {},
    target_processes: {},
    parameters: {
      big: {
        element_size: 4,
        source_map: split(4) as PlanFile["parameters"][string]["source_map"],
        target_map: split(8) as PlanFile["parameters"][string]["target_map"],
        segments: list,
      },
    },
  };
}

const pairs = moonlightPairs();
const plansByPolicy = new Map(POLICIES.map((p) => [p, planMoonlight(p, pairs)]));

for (const policy of POLICIES) {
  Deno.bench(`plan Moonlight EP4→8 (${policy})`, { group: "plan" }, () => {
    planMoonlight(policy, pairs);
  });
  Deno.bench(`verify Moonlight EP4→8 (${policy})`, { group: "verify" }, () => {
    if (!verifyPlan(plansByPolicy.get(policy)!).ok) throw new Error("rejected");
  });
}

let million: PlanFile | null = null;
Deno.bench("verify 1,000,000 segments", { group: "million", n: 5, warmup: 1 }, () => {
  million ??= millionSegmentPlan();
  if (!verifyPlan(million).ok) throw new Error("rejected");
});

function heapMiB(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return Deno.memoryUsage().heapUsed / (1 << 20);
}

function timed<T>(f: () => T, repeats: number): { value: T; ms: number } {
  let value = f();
  const start = performance.now();
  for (let i = 0; i < repeats; i++) value = f();
  return { value, ms: (performance.now() - start) / repeats };
}

/** Prints the report table behind docs/PERFORMANCE.md. */
function report(): void {
  const gib = (b: number) => (b / (1 << 30)).toFixed(2);
  console.log(
    "| policy | plan ms | verify ms | plan heap MiB | segments | moved GiB | local GiB | " +
      "max send GiB | mean send GiB |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|");
  for (const policy of POLICIES) {
    const before = heapMiB();
    const kept = planMoonlight(policy, pairs);
    const heap = heapMiB() - before;
    const plan = timed(() => planMoonlight(policy, pairs), 5);
    const verify = timed(() => verifyPlan(kept), 5);
    const s = verify.value.stats!;
    if (!verify.value.ok) throw new Error(verify.value.error!);
    console.log(
      `| ${policy} | ${plan.ms.toFixed(1)} | ${verify.ms.toFixed(1)} | ${heap.toFixed(1)} | ` +
        `${s.segments} | ${gib(s.movedBytes)} | ${gib(s.localBytes)} | ` +
        `${gib(s.maxProcessSendBytes)} | ${gib(s.meanProcessSendBytes)} |`,
    );
  }
  const before = heapMiB();
  const big = millionSegmentPlan();
  const built = heapMiB() - before;
  const text = JSON.stringify(big);
  const parse = timed(() => JSON.parse(text), 1);
  const verify = timed(() => verifyPlan(big), 3);
  if (!verify.value.ok) throw new Error(verify.value.error!);
  console.log(
    `\n1,000,000 segments: verify ${verify.ms.toFixed(0)} ms (JSON.parse of the ` +
      `${(text.length / (1 << 20)).toFixed(0)} MiB file ${parse.ms.toFixed(0)} ms; plan object ` +
      `${built.toFixed(0)} MiB heap)`,
  );
}

if (import.meta.main) report();
