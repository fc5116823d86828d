import { equal, match, ok } from "node:assert/strict";
import { singlePlanFile } from "./_testing.ts";
import { contiguousSplitMap, mapToDict, replicatedMap } from "./map.ts";
import type { TransferSegmentDict } from "./plan_transfers.ts";
import { executeSegments, verifyPlan } from "./verify.ts";

const vectors = JSON.parse(
  await Deno.readTextFile(new URL("./testdata/deepspeed_plans.json", import.meta.url)),
) as {
  cases: {
    name: string;
    source_map: unknown;
    target_map: unknown;
    deepspeed_plan_lowest_holder: { segments: TransferSegmentDict[] };
  }[];
};

function vector(name: string) {
  const c = vectors.cases.find((v) => v.name === name)!;
  const segments = structuredClone(c.deepspeed_plan_lowest_holder.segments);
  return { c, segments, file: () => singlePlanFile(c.source_map, c.target_map, segments) };
}

function rejected(plan: unknown, pattern: RegExp): string {
  const verdict = verifyPlan(plan);
  equal(verdict.ok, false, "plan should be rejected");
  equal(verdict.stats, null);
  match(verdict.error!, pattern);
  return verdict.error!;
}

Deno.test("verifyPlan() rejects a gap, naming the segment before it", () => {
  const v = vector("row2_to_col4_48x8");
  const removed = v.segments.splice(3, 1)[0];
  const error = rejected(
    v.file(),
    /^parameters\.w: target location \d+ addresses \[\d+, \d+\) are written by no segment/,
  );
  ok(
    error.includes(`[${removed.target[1]}, ${removed.target[1] + 48}`) ||
      error.includes("gap after"),
  );
});

Deno.test("verifyPlan() rejects an overlap, naming both segments", () => {
  const v = vector("row2_to_col4_48x8");
  v.segments.push(structuredClone(v.segments[2]));
  rejected(
    v.file(),
    /^parameters\.w\.segments\[8\]: target location \d+ address \d+ is also written by segments\[2\]/,
  );
});

Deno.test("verifyPlan() rejects a segment read from a location that does not hold the data", () => {
  const v = vector("row2_to_row4_48x8");
  // Segment 0 copies rows 0..11 from source rank 0; rank 1 holds rows 24..47 only.
  v.segments[0].source[0] = 1;
  rejected(
    v.file(),
    /^parameters\.w\.segments\[0\]: .*location 1 does not hold it \(holders: \[0\]\)/,
  );
});

Deno.test("verifyPlan() rejects a segment read from the wrong address of a holder", () => {
  const v = vector("row2_to_row4_48x8");
  v.segments[0].source[1] += 8;
  rejected(v.file(), /^parameters\.w\.segments\[0\]: .*location 0 holds it at another address/);
});

Deno.test("verifyPlan() rejects out-of-bounds addresses on either side", () => {
  const a = vector("row2_to_row4_48x8");
  a.segments[2].target[1] += 1000;
  rejected(
    a.file(),
    /^parameters\.w\.segments\[2\]: writes target location \d+ up to address \d+, past its 96-element shard/,
  );
  const b = vector("row2_to_row4_48x8");
  b.segments[3].source[1] = 10_000;
  rejected(
    b.file(),
    /^parameters\.w\.segments\[3\]: reads source location \d+ up to address \d+, past its/,
  );
});

Deno.test("verifyPlan() rejects malformed segments and names the field", () => {
  const cases: [(s: TransferSegmentDict[]) => void, RegExp][] = [
    [(s) => (s[1].shape = [0, 8]), /segments\[1\]: shape \[0, 8\] copies nothing/],
    [(s) => (s[1].source[2] = [8]), /segments\[1\]\.source\[2\]: 1 strides for a 2-axis shape/],
    [(s) => (s[0].target[2] = [-8, 1]), /segments\[0\]\.target\[2\]: -8 is not an integer >= 0/],
    [
      (s) => (s[2].target[0] = 9),
      /segments\[2\]: target location 9 is not a rank of the target map/,
    ],
    [
      (s) => ((s[0] as unknown as { source: unknown }).source = "0"),
      /segments\[0\]\.source: expected/,
    ],
    [
      (s) => (s[1].logical_origin = [0, 0]),
      /segments\[1\]\.logical_origin: \[0, 0\], but the segment starts at \[12, 0\]/,
    ],
    [
      (s) => (s[0].target[2] = [0, 1]),
      /segments\[0\]: target location 0 address 0 expects .* location 0 holds it at another address/,
    ],
    [(s) => {
      s[0].target[2] = [0, 1];
      s[0].source[2] = [0, 1];
    }, /segments\[0\]: writes target location 0 address 0 twice/],
  ];
  for (const [breakIt, pattern] of cases) {
    const v = vector("row2_to_row4_48x8");
    breakIt(v.segments);
    rejected(v.file(), pattern);
  }
});

Deno.test("verifyPlan() accepts a correct logical_origin (DeepSpeed v1 segments)", () => {
  const v = vector("row2_to_row4_48x8");
  v.segments.forEach((s) => (s.logical_origin = [s.target[0] * 12, 0]));
  equal(verifyPlan(v.file()).error, null);
});

Deno.test("verifyPlan() checks the maps: tiling by address, holders, coverage", () => {
  const v = vector("row2_to_row4_48x8");
  const overlap = structuredClone(v.c.source_map) as {
    ranks: Record<string, { pieces: { dest: [number, number[]] }[] }>;
  };
  // A fused source where two pieces of rank 0 land on the same shard addresses.
  const bigcode = structuredClone(
    vectors.cases.find((c) => c.name === "bigcode2_to_bigcode4")!.source_map,
  ) as typeof overlap;
  bigcode.ranks["0"].pieces[1].dest[0] = 0;
  rejected(
    singlePlanFile(bigcode, v.c.target_map, []),
    /source_map\.ranks\.0: pieces overlap at shard address 0/,
  );
  // Rank 1 declares it also holds rank 0's rows.
  const liar = structuredClone(v.c.source_map) as {
    ranks: Record<string, { pieces: { locations: number[] }[] }>;
  };
  liar.ranks["0"].pieces[0].locations = [0, 1];
  rejected(
    singlePlanFile(liar, v.c.target_map, v.segments),
    /declares locations \[0,1\] but logical element \[0, 0\] is held by \[0\]/,
  );
  // A target map that leaves rows uncovered.
  const thin = mapToDict(contiguousSplitMap([48, 8], [24, 24], 0));
  thin.ranks["1"].pieces[0].shape = [20, 8];
  rejected(
    singlePlanFile(v.c.source_map, thin, []),
    /pieces hold|belong to no piece|has no holder/,
  );
  // Shapes disagree.
  rejected(
    singlePlanFile(v.c.source_map, mapToDict(replicatedMap([47, 8], [0])), []),
    /describes \[48, 8\], target_map \[47, 8\]/,
  );
});

Deno.test("verifyPlan() requires a process for every location once a mapping is given", () => {
  const v = vector("row2_to_row4_48x8");
  const plan = v.file();
  plan.source_processes = { 0: 0 };
  plan.target_processes = { 0: 0, 1: 0, 2: 1, 3: 1 };
  rejected(plan, /parameters\.w\.source_map: location 1 has no entry in source_processes/);
});

Deno.test("verifyPlan() rejects a broken envelope without throwing", () => {
  rejected(null, /^plan: expected a JSON object/);
  rejected({ schema_version: 2 }, /^schema_version: expected 1/);
  rejected({
    schema_version: 1,
    policy: "x",
    source_processes: { a: 1 },
    target_processes: {},
    parameters: {},
  }, /key "a" is not a location/);
  rejected(
    { ...vector("row2_to_row4_48x8").file(), parameters: { w: { element_size: 0 } } },
    /element_size: expected a positive integer/,
  );
});

Deno.test("verifyPlan() computes traffic stats with process mappings", () => {
  const v = vector("row2_to_row4_48x8");
  const plan = v.file();
  // Source ranks 0, 1 are processes 0, 1; target ranks 0..3 are processes 0, 0, 1, 1.
  plan.source_processes = { 0: 0, 1: 1 };
  plan.target_processes = { 0: 0, 1: 0, 2: 1, 3: 1 };
  const verdict = verifyPlan(plan, { execute: true });
  equal(verdict.error, null);
  const s = verdict.stats!;
  equal(s.segments, 4);
  equal(s.movedBytes, 48 * 8 * 4);
  // Rows 0..23 go from process 0 to process 0 and rows 24..47 from 1 to 1: all local.
  equal(s.localBytes, 48 * 8 * 4);
  equal(s.remoteBytes, 0);
  equal(s.maxProcessSendBytes, 0);
  equal(s.processesMapped, true);
  plan.target_processes = { 0: 1, 1: 1, 2: 0, 3: 0 };
  const crossed = verifyPlan(plan).stats!;
  equal(crossed.localBytes, 0);
  equal(crossed.sendBytesByProcess["0"], 768);
  equal(crossed.receiveBytesByProcess["1"], 768);
  equal(crossed.maxProcessSendBytes, 768);
  equal(crossed.meanProcessSendBytes, 768);
});

Deno.test("verifyPlan() without mappings counts every byte as remote, per location", () => {
  const s = verifyPlan(vector("ep4_rep01_to_ep8").file()).stats!;
  equal(s.localBytes, 0);
  equal(s.remoteBytes, s.movedBytes);
  equal(Object.keys(s.sendBytesByProcess).sort().join(), "source:0,source:1,source:2,source:3");
  equal(Object.keys(s.receiveBytesByProcess).length, 8);
  equal(s.meanProcessSendBytes, s.movedBytes / 4);
});

Deno.test("verifyPlan() handles segments that wrap across shard rows by address", () => {
  // Shard of [2, 4] filled from a flat [8] source: one [1, 8] segment wraps both rows.
  const source = mapToDict(contiguousSplitMap([8], [8], 0));
  const target = {
    logical_shape: [8],
    ranks: {
      "0": {
        shard_shape: [8],
        pieces: [{ shape: [8], source: [0, [1]], dest: [0, [1]], locations: [0] }],
      },
    },
  };
  const plan = singlePlanFile(source, target, [{
    shape: [2, 4],
    source: [0, 0, [4, 1]],
    target: [0, 0, [4, 1]],
  }]);
  equal(verifyPlan(plan, { execute: true }).error, null);
});

Deno.test("executeSegments() copies source shards into target shards", () => {
  const v = vector("row2_to_row4_48x8");
  const src = new Map([[0, new Float32Array(192).fill(1)], [1, new Float32Array(192).fill(2)]]);
  const out = executeSegments({ target_map: v.c.target_map, segments: v.segments }, src);
  equal(out.size, 4);
  ok(out.get(0) instanceof Float32Array);
  equal(out.get(0)![0], 1);
  equal(out.get(3)![95], 2);
});
