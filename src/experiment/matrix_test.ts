import { deepEqual, equal, ok } from "node:assert/strict";
import { quickstartRaw } from "../../test/_testing/experiment_files.ts";
import { expandMatrix, MAX_MATRIX_COMBINATIONS } from "./matrix.ts";
import { ExperimentObjectSchema } from "./schema.ts";

const expand = (matrix: unknown) =>
  expandMatrix({ ...quickstartRaw(), matrix } as Record<string, unknown>, ExperimentObjectSchema);

Deno.test("expandMatrix() without a matrix yields the experiment itself", () => {
  const raw = quickstartRaw();
  const result = expandMatrix(raw, ExperimentObjectSchema);
  ok(result.ok);
  deepEqual(result.expansions, [{ raw, suffix: "", assignments: [] }]);
});

Deno.test("expandMatrix() forms the cartesian product in key order, first key slowest", () => {
  const result = expand({
    "trainer.args.zero_stage": [1, 3],
    "trainer.args.precision": ["fp32", "bf16"],
  });
  ok(result.ok);
  deepEqual(result.expansions.map((e) => e.suffix), [
    "[zero_stage=1,precision=fp32]",
    "[zero_stage=1,precision=bf16]",
    "[zero_stage=3,precision=fp32]",
    "[zero_stage=3,precision=bf16]",
  ]);
  const last = result.expansions[3].raw as {
    trainer: { args: Record<string, unknown> };
    matrix?: unknown;
  };
  equal(last.trainer.args.zero_stage, 3);
  equal(last.trainer.args.precision, "bf16");
  equal(last.trainer.args.world_size, 4);
  equal("matrix" in last, false);
  deepEqual(result.expansions[1].assignments, [
    { key: "trainer.args.zero_stage", index: 0, value: 1 },
    { key: "trainer.args.precision", index: 1, value: "bf16" },
  ]);
});

Deno.test("expandMatrix() creates missing mappings and keeps combinations independent", () => {
  const result = expand({ "resume.extra.from": ["native", "universal"] });
  ok(result.ok);
  const froms = result.expansions.map((e) =>
    (e.raw.resume as Record<string, { from: string }>).extra.from
  );
  deepEqual(froms, ["native", "universal"]);
  // The universal combination did not leak into the first.
  equal((result.expansions[0].raw.resume as Record<string, unknown>).native !== undefined, true);
});

Deno.test("expandMatrix() lengthens labels that would clash and numbers unfit values", () => {
  const result = expand({
    "trainer.args.world_size": [4],
    "resume.reshard.args.world_size": [2],
    "trainer.args.placement": [{
      version: 1,
      num_experts: 2,
      ep_size: 1,
      ranks: [{ rank: 0, experts: [0, 1] }],
    }, "p/x.json"],
  });
  ok(result.ok);
  deepEqual(result.expansions.map((e) => e.suffix), [
    "[trainer.args.world_size=4,reshard.args.world_size=2,placement#1]",
    "[trainer.args.world_size=4,reshard.args.world_size=2,placement#2]",
  ]);
});

Deno.test("expandMatrix() rejects empty lists, non-lists and unknown paths", () => {
  const errors = (matrix: unknown) => {
    const result = expand(matrix);
    return result.ok ? [] : result.errors.map((e) => `${e.path}: ${e.message}`);
  };
  deepEqual(errors({ "trainer.args.zero_stage": [] }), [
    "matrix.trainer.args.zero_stage: expected at least one value",
  ]);
  deepEqual(errors({ "trainer.args.zero_stage": 3 }), [
    "matrix.trainer.args.zero_stage: expected a list of values",
  ]);
  deepEqual(errors({ "trainer.argz.zero_stage": [1] }), [
    "matrix.trainer.argz.zero_stage: unknown path: no field argz in trainer (did you mean args?)",
  ]);
  deepEqual(errors({ "schedul.steps": [1] }), [
    "matrix.schedul.steps: unknown path: no field schedul at the top level (did you mean schedule?)",
  ]);
  deepEqual(errors({ "name": ["a"] }), ["matrix.name: name cannot be varied by a matrix"]);
  deepEqual(errors({}), ["matrix: expected at least one path"]);
  deepEqual(errors([1, 2]), ["matrix: expected a mapping of path: [values]"]);
  deepEqual(errors({ "schedule.steps.x": [1] }), [
    "matrix.schedule.steps.x: unknown path: no field x in schedule.steps",
  ]);
  const big = Object.fromEntries(
    Array.from({ length: 11 }, (_, i) => [`trainer.args.k${i}`, [1, 2]]),
  );
  equal(2 ** 11 > MAX_MATRIX_COMBINATIONS, true);
  deepEqual(errors(big), [
    `matrix: 2048 combinations; at most ${MAX_MATRIX_COMBINATIONS} are allowed`,
  ]);
});
