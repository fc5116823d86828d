import assert from "node:assert/strict";
import { canonicalJson } from "../canonical_json.ts";
import { dependentsOf, phaseGraph } from "./phase_graph.ts";
import { ExperimentObjectSchema } from "../schema.ts";

const placement = (ranks: number[][]) => ({
  version: 1,
  num_experts: 4,
  ep_size: ranks.length,
  ranks: ranks.map((experts, rank) => ({ rank, experts })),
});

function experiment(extra: Record<string, unknown> = {}) {
  return ExperimentObjectSchema.parse({
    name: "t",
    schedule: { steps: 40, save_at: 20 },
    trainer: {
      preset: "reference",
      args: { world_size: 4, ep_size: 2, placement: placement([[0, 1, 2], [2, 3]]) },
    },
    resume: {
      native: { from: "native" },
      universal: { from: "universal" },
      reshard: {
        from: "universal",
        args: { world_size: 2, placement: placement([[0, 3], [1, 2, 3]]) },
      },
    },
    ...extra,
  });
}

Deno.test("phaseGraph() orders phases and wires what each consumes", () => {
  const nodes = phaseGraph(experiment({ noise_floor: { repeats: 2 } }));
  assert.deepEqual(nodes.map((n) => n.name), [
    "baseline",
    "split",
    "resume-native",
    "convert",
    "resume-universal",
    "resume-reshard",
    "baseline-repeat-1",
    "baseline-repeat-2",
  ]);
  const byName = new Map(nodes.map((n) => [n.name, n]));
  assert.deepEqual(byName.get("resume-native")!.consumes, ["split"]);
  assert.deepEqual(byName.get("resume-universal")!.consumes, ["convert"]);
  assert.equal(byName.get("split")!.stopAt, 20);
  assert.deepEqual(byName.get("split")!.saveSteps, [20]);
  assert.equal(byName.get("baseline")!.stopAt, 40);
  assert.equal(byName.get("resume-reshard")!.args.world_size, 2);
  assert.equal(
    byName.get("resume-reshard")!.args.ep_size,
    2,
    "unspecified keys come from trainer.args",
  );
});

Deno.test("phaseGraph() adds a plan and a plan resume per policy on the target's arguments", () => {
  const nodes = phaseGraph(experiment({
    plan_sync: {
      target: { world_size: 2, placement: placement([[0, 3], [1, 2, 3]]) },
      policies: ["first_holder", "balanced"],
    },
  }));
  const byName = new Map(nodes.map((n) => [n.name, n]));
  assert.ok(byName.has("plan-first_holder") && byName.has("plan-balanced"));
  const planResume = byName.get("resume-plan-balanced")!;
  assert.deepEqual(planResume.consumes, ["plan-balanced", "split"]);
  assert.equal(planResume.resumeKind, "plan");
  assert.deepEqual(planResume.args, byName.get("resume-reshard")!.args);
});

Deno.test("phaseGraph() needs no convert phase without a universal resume", () => {
  const nodes = phaseGraph(experiment({ resume: { native: { from: "native" } } }));
  assert.ok(!nodes.some((n) => n.name === "convert"));
});

Deno.test("dependentsOf() follows consumption transitively", () => {
  const nodes = phaseGraph(experiment());
  assert.deepEqual(
    [...dependentsOf(nodes, "split")].sort(),
    ["convert", "resume-native", "resume-reshard", "resume-universal"],
  );
  assert.deepEqual([...dependentsOf(nodes, "baseline")], []);
});

Deno.test("canonicalJson() sorts keys at every depth", () => {
  assert.equal(
    canonicalJson({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: null } }),
    '{"a":{"c":null,"d":[1,{"x":1,"y":2}]},"b":1}',
  );
});

Deno.test("phaseGraph() of a fused split: no split phase, the baseline saves, all read its checkpoint", () => {
  const exp = experiment({
    schedule: { steps: 40, save_at: 20, split: "fused" },
    plan_sync: {
      target: { world_size: 2, placement: placement([[0, 3], [1, 2, 3]]) },
      policies: ["balanced"],
      execute: true,
      resume: true,
    },
  });
  const nodes = phaseGraph(exp);
  assert.ok(!nodes.some((n) => n.role === "split"));
  const baseline = nodes.find((n) => n.name === "baseline")!;
  assert.deepEqual(baseline.saveSteps, [20]);
  assert.equal(baseline.stopAt, 40);
  const byName = new Map(nodes.map((n) => [n.name, n]));
  assert.deepEqual(byName.get("resume-native")!.consumes, ["baseline"]);
  assert.deepEqual(byName.get("convert")!.consumes, ["baseline"]);
  assert.deepEqual(byName.get("plan-balanced")!.consumes, ["baseline"]);
  assert.deepEqual(byName.get("execute-plan-balanced")!.consumes, ["plan-balanced", "baseline"]);
  assert.deepEqual(byName.get("resume-plan-balanced")!.consumes, ["plan-balanced", "baseline"]);
  // The default stays a separate split whose baseline never saves.
  const separate = phaseGraph(experiment());
  assert.equal(separate.find((n) => n.name === "baseline")!.saveSteps, undefined);
  assert.deepEqual(separate.find((n) => n.name === "resume-native")!.consumes, ["split"]);
});
