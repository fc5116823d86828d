import assert from "node:assert/strict";
import { makePlacement } from "../../src/affine/map.ts";
import { MODEL, type Topology } from "./config.ts";
import { makeDataset } from "./data.ts";
import { Engine } from "./engine.ts";
import { buildLayout } from "./layout.ts";
import { PARAM } from "./model.ts";
import { initState, stateDigests } from "./state.ts";

function run(topology: Topology, steps: number) {
  const state = initState(buildLayout(topology, MODEL), 5, 10);
  const engine = new Engine(state, makeDataset(5, MODEL), 2);
  const records = [];
  for (let k = 0; k < steps; k++) {
    while (engine.pending < 2) engine.runMicro();
    records.push(engine.finishStep());
  }
  return { state, records };
}

const quick: Topology = {
  worldSize: 4,
  epSize: 2,
  placement: makePlacement(4, [[0, 1, 3], [2, 3]]),
  zeroStage: 2,
  precision: "bf16",
};

Deno.test("Engine keeps the replicas of a replicated expert bit-identical", () => {
  const { state } = run(quick, 4);
  const d = MODEL.dModel * MODEL.dFF;
  for (const name of [PARAM.w1, PARAM.w2, PARAM.w3]) {
    const ps = state.params.get(name)!;
    // Expert 3 is slot 2 on EP rank 0 and slot 1 on EP rank 1.
    assert.deepEqual(ps.fp32[0].subarray(2 * d, 3 * d), ps.fp32[1].subarray(d, 2 * d));
    assert.deepEqual(ps.expAvgSq[0].subarray(2 * d, 3 * d), ps.expAvgSq[1].subarray(d, 2 * d));
  }
});

Deno.test("Engine on another topology differs only in low bits and keeps RNG and sampler", () => {
  const a = run(quick, 3);
  const b = run(
    { ...quick, worldSize: 1, epSize: 1, placement: makePlacement(4, [[0, 1, 2, 3]]) },
    3,
  );
  for (let i = 0; i < 3; i++) {
    const rel = Math.abs(a.records[i].loss - b.records[i].loss) / a.records[i].loss;
    assert.ok(rel < 1e-5, `step ${i + 1}: rel ${rel}`);
  }
  const da = stateDigests(a.state), db = stateDigests(b.state);
  for (const k of ["rng", "sampler", "lr_scheduler", "optimizer_step"]) assert.equal(da[k], db[k]);
});

Deno.test("Engine bf16 module weights are the rounded fp32 master", () => {
  const { state } = run(quick, 2);
  const ps = state.params.get(PARAM.head)!;
  const u = new Uint32Array(ps.module[0].buffer);
  assert.ok(u.every((w) => (w & 0xffff) === 0));
  assert.notDeepEqual(ps.module[0], ps.fp32[0]);
});
