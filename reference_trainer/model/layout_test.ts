import assert from "node:assert/strict";
import { makePlacement, numelOf } from "../../src/affine/map.ts";
import { MODEL, type Topology } from "./config.ts";
import { UsageError } from "./trainer_errors.ts";
import { buildLayout, edpRanks, epRankOf, topologyFromJson } from "./layout.ts";
import { PARAM } from "./model.ts";
import { isColumnSplit } from "../checkpoints/universal.ts";

const topology: Topology = {
  worldSize: 4,
  epSize: 2,
  placement: makePlacement(4, [[0, 1, 3], [2, 3]]),
  zeroStage: 2,
  precision: "bf16",
};

Deno.test("buildLayout() gives experts the placement map and the head a column split", () => {
  const layout = buildLayout(topology, MODEL);
  const w1 = layout.maps.get(PARAM.w1)!;
  assert.deepEqual(w1.ranks.get(0)!.shardShape, [3, MODEL.dModel, MODEL.dFF]);
  assert.deepEqual(w1.ranks.get(1)!.shardShape, [2, MODEL.dModel, MODEL.dFF]);
  const replicated = w1.ranks.get(1)!.pieces.find((p) => p.locations.length > 1)!;
  assert.deepEqual(replicated.locations, [0, 1]);
  const head = layout.maps.get(PARAM.head)!;
  assert.ok(isColumnSplit(head));
  assert.deepEqual(head.ranks.get(1)!.shardShape, [MODEL.dModel, MODEL.vocab / 2]);
  assert.ok(!isColumnSplit(layout.maps.get(PARAM.embed)!));
  assert.deepEqual(layout.holders[3], [0, 1]);
  assert.equal(layout.slots[1][3], 1);
  assert.equal(layout.slots[1][0], -1);
});

Deno.test("buildLayout() partitions flat groups over the right data-parallel ranks", () => {
  const layout = buildLayout(topology, MODEL);
  assert.deepEqual(layout.dense.ranks, [0, 1, 2, 3]);
  assert.deepEqual(layout.expert[1].ranks, [1, 3]);
  assert.deepEqual(edpRanks(topology, 0), [0, 2]);
  assert.equal(epRankOf(topology, 3), 1);
  const denseNumel = MODEL.vocab * MODEL.dModel + MODEL.dModel * MODEL.numExperts;
  assert.equal(layout.dense.numel, denseNumel);
  assert.equal(layout.dense.partitionSize, Math.ceil(denseNumel / 4));
  const e1 = layout.expert[1];
  const want = 3 * 2 * MODEL.dModel * MODEL.dFF + MODEL.dModel * (MODEL.vocab / 2);
  assert.equal(e1.numel, want);
  assert.equal(e1.entries.at(-1)!.name, PARAM.head);
  for (const g of [layout.dense, ...layout.expert]) {
    for (const e of g.entries) {
      const shard = layout.maps.get(e.name)!.ranks.get(g.epRank ?? 0)!;
      assert.equal(e.numel, numelOf(shard.shardShape));
    }
  }
});

Deno.test("buildLayout() refuses an EP size that does not divide the world size", () => {
  assert.throws(() => buildLayout({ ...topology, worldSize: 3 }, MODEL), UsageError);
  assert.throws(
    () => buildLayout({ ...topology, epSize: 4 }, MODEL),
    /placement is for ep_size 2, but --ep-size is 4/,
  );
});

Deno.test("topologyFromJson() reads a target topology with defaults and clear errors", () => {
  const t = topologyFromJson(
    { world_size: 4, placement: [[0, 1, 3], [2, 3]], precision: "bf16" },
    MODEL,
  );
  assert.deepEqual(t, { ...topology, zeroStage: 2 });
  assert.equal(topologyFromJson({ world_size: 2 }, MODEL).placement.ep_size, 1);
  assert.throws(
    () => topologyFromJson({ world_size: 3, ep_size: 2 }, MODEL),
    /does not divide --world-size 3/,
  );
  assert.throws(
    () => topologyFromJson({ world_size: 2, ep_size: 2, placement: [[0], [1]] }, MODEL),
    /\[2,3\]/,
  );
  assert.throws(() => topologyFromJson({ world_size: 2, zero: 1 }, MODEL), /unknown key zero/);
  assert.throws(
    () => topologyFromJson({ world_size: 2, zero_stage: 4 }, MODEL),
    /--zero-stage must be 1, 2 or 3/,
  );
});

Deno.test("topologyFromJson() ignores other keys only when asked", () => {
  const raw = { world_size: 2, ep_size: 2, zero_stage: 1, grad_accum: 2, steps: 40 };
  assert.throws(() => topologyFromJson(raw, MODEL), /unknown key grad_accum/);
  const t = topologyFromJson(raw, MODEL, "target", { ignoreOtherKeys: true });
  assert.equal(t.worldSize, 2);
  assert.equal(t.zeroStage, 1);
  assert.throws(
    () =>
      topologyFromJson({ ...raw, precision: "fp16" }, MODEL, "target", { ignoreOtherKeys: true }),
    /target\.precision: expected "fp32" or "bf16"/,
  );
});
