import { deepEqual, equal, ok } from "node:assert/strict";
import { commandRaw, quickstartRaw } from "../../test/_testing/experiment_files.ts";
import { formatValidationErrors } from "./validation_errors.ts";
import { readExperimentFile, validateExperiment } from "./validate_experiment.ts";

// deno-lint-ignore no-explicit-any
type Loose = Record<string, any>;

function errorLines(raw: unknown, sets: string[] = []): string[] {
  const result = validateExperiment(raw, { sets });
  if (result.ok) return [];
  return result.errors.map((e) => (e.path ? `${e.path}: ${e.message}` : e.message));
}

Deno.test("validateExperiment() fills defaults of a valid experiment", () => {
  const result = validateExperiment(quickstartRaw());
  ok(result.ok);
  const [exp] = result.experiments;
  equal(exp.name, "quickstart");
  equal(exp.seed, 1234);
  equal(exp.trainer.timeout, 3600);
  equal(exp.parallel, 1);
  equal(exp.keep_checkpoints, "all");
  deepEqual(exp.metrics, ["loss"]);
  deepEqual(exp.noise_floor, { repeats: 0 });
  equal(exp.plan_sync?.resume, true);
  equal(exp.plan_sync?.element_size, 4);
});

Deno.test("validateExperiment() makes zod messages human and path-precise", () => {
  const raw = quickstartRaw() as Loose;
  raw.resume.reshard.args.world_size = 0;
  raw.trainer.wolrd_size = 4;
  raw.trainer.args.precision = "fp16";
  raw.schedule.steps = "forty";
  raw.tolerance = { auto: true, rtol: 1 };
  raw.trainer.args.placement = { version: 1, num_experts: 4 };
  delete raw.name;
  deepEqual(errorLines(raw).sort(), [
    "name: required",
    "resume.reshard.args.world_size: expected a positive integer, got 0",
    'schedule.steps: expected a positive integer, got "forty"',
    "tolerance.rtol: unknown key (did you mean atol?)",
    "trainer.args.placement.ep_size: required",
    "trainer.args.placement.ranks: required",
    'trainer.args.precision: expected one of fp32, bf16, got "fp16"',
    "trainer.wolrd_size: unknown key (did you mean args.world_size?)",
  ]);
});

Deno.test("validateExperiment() reports schema and cross-field problems together", () => {
  const raw = quickstartRaw() as Loose;
  raw.trainer.args.precision = "fp16"; // schema
  raw.trainer.extra = 1; // schema (unknown key)
  raw.schedule.save_at = 40; // rule
  raw.trainer.args.fault = "nope"; // rule
  raw.compare = [{ a: "baseline", b: "resume-nope" }]; // rule
  const lines = errorLines(raw);
  for (
    const prefix of [
      "trainer.args.precision:",
      "trainer.extra:",
      "schedule.save_at:",
      "trainer.args.fault:",
      "compare[0].b:",
    ]
  ) {
    ok(lines.some((line) => line.startsWith(prefix)), `${prefix} in ${lines.join("\n")}`);
  }
});

Deno.test("validateExperiment() does not blame rules on a value the schema already rejected", () => {
  const raw = quickstartRaw() as Loose;
  raw.trainer.preset = "referenc";
  deepEqual(errorLines(raw), [
    'trainer.preset: expected one of reference, deepspeed, hf, got "referenc" (did you mean reference?)',
  ]);
});

Deno.test("validateExperiment() applies --set before validating", () => {
  const result = validateExperiment(quickstartRaw(), {
    sets: [
      "schedule.steps=60",
      "trainer.args.fault=skip-rng-restore",
      "plan_sync.target.placement={version: 1, num_experts: 2, ep_size: 1, ranks: [{rank: 0, experts: [0, 1]}]}",
      "resume.reshard.args.world_size=4",
    ],
  });
  ok(result.ok, JSON.stringify(result));
  const [exp] = result.experiments;
  equal(exp.schedule.steps, 60);
  equal(exp.trainer.args?.fault, "skip-rng-restore");
  deepEqual(exp.plan_sync?.target.placement, {
    version: 1,
    num_experts: 2,
    ep_size: 1,
    ranks: [{ rank: 0, experts: [0, 1] }],
  });
  equal(exp.resume.reshard.args?.world_size, 4);
});

Deno.test("validateExperiment() reports bad --set paths as usage errors naming the --set", () => {
  deepEqual(errorLines(quickstartRaw(), ["schedule.steps.max=3"]), [
    "--set schedule.steps.max=3: schedule.steps is 40, not a mapping",
  ]);
  deepEqual(errorLines(quickstartRaw(), ["schedule.steps"]), [
    "--set schedule.steps: expected KEY.PATH=VALUE",
  ]);
  deepEqual(errorLines(quickstartRaw(), ["schedule.stepz=3"]), [
    "schedule.stepz: unknown key (did you mean steps?)",
  ]);
});

Deno.test("validateExperiment() expands a matrix into named experiments", () => {
  const raw = { ...quickstartRaw(), matrix: { "trainer.args.zero_stage": [1, 2, 3] } };
  const result = validateExperiment(raw);
  ok(result.ok);
  deepEqual(result.experiments.map((e) => e.name), [
    "quickstart[zero_stage=1]",
    "quickstart[zero_stage=2]",
    "quickstart[zero_stage=3]",
  ]);
  deepEqual(result.experiments.map((e) => e.trainer.args?.zero_stage), [1, 2, 3]);
  equal(result.experiments.every((e) => e.matrix === undefined), true);
});

Deno.test("validateExperiment() lets --set replace a matrix dimension or the matrix values", () => {
  const raw = { ...quickstartRaw(), matrix: { "trainer.args.zero_stage": [1, 2, 3] } };
  const single = validateExperiment(raw, { sets: ["trainer.args.zero_stage=3"] });
  ok(single.ok);
  deepEqual(single.experiments.map((e) => e.name), ["quickstart"]);
  const two = validateExperiment(raw, { sets: ["matrix.trainer.args.zero_stage=[2, 3]"] });
  ok(two.ok);
  deepEqual(two.experiments.map((e) => e.name), [
    "quickstart[zero_stage=2]",
    "quickstart[zero_stage=3]",
  ]);
});

Deno.test("validateExperiment() reports matrix values at matrix.<key>[i] and says where errors occur", () => {
  const raw = {
    ...quickstartRaw(),
    matrix: { "trainer.args.zero_stage": [1, 4], "trainer.args.world_size": [4, 3] },
  };
  deepEqual(errorLines(raw), [
    "trainer.args.ep_size: ep_size 2 does not divide world_size 3 (when world_size=3)",
    "matrix.trainer.args.zero_stage[1]: expected 0, 1, 2 or 3, got 4",
  ]);
  const pairs = {
    ...quickstartRaw(),
    matrix: { "trainer.args.world_size": [4, 6, 3], "trainer.args.ep_size": [2, 3] },
  };
  deepEqual(errorLines(pairs), [
    "matrix.trainer.args.ep_size[1]: ep_size 3 does not divide world_size 4 (when world_size=4)",
    "matrix.trainer.args.ep_size[0]: ep_size 2 does not divide world_size 3 (when world_size=3)",
  ]);
  const inherited = {
    ...quickstartRaw(),
    resume: { reshard: { from: "universal", args: { world_size: 3 } } },
    matrix: { "trainer.args.ep_size": [1, 2, 4] },
  };
  deepEqual(errorLines(inherited), [
    "resume.reshard.args.world_size: ep_size 2 (inherited from trainer.args) does not divide world_size 3 (when ep_size=2)",
    "resume.reshard.args.world_size: ep_size 4 (inherited from trainer.args) does not divide world_size 3 (when ep_size=4)",
  ]);
});

Deno.test("validateExperiment() still checks the rest of a file whose matrix is broken", () => {
  const raw = { ...quickstartRaw(), matrix: { "trainer.args.zero_stage": [] }, seed: -1 };
  deepEqual(errorLines(raw), [
    "matrix.trainer.args.zero_stage: expected at least one value",
    "seed: expected a non-negative integer, got -1",
  ]);
});

Deno.test("validateExperiment() rejects combinations that would share a name", () => {
  const raw = { ...quickstartRaw(), matrix: { "description": ["a", "a"] } };
  deepEqual(errorLines(raw), ["matrix: two combinations are both named quickstart[description=a]"]);
});

Deno.test("validateExperiment() rejects a top level that is not a mapping", () => {
  deepEqual(errorLines([1]), ["expected a mapping at the top level, got a list"]);
  deepEqual(errorLines(null), ["expected a mapping at the top level, got nothing"]);
});

Deno.test("readExperimentFile() returns load errors as validation errors", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const good = `${dir}/good.json`;
    await Deno.writeTextFile(good, JSON.stringify(commandRaw()));
    const ok1 = await readExperimentFile(good, { sets: ["schedule.steps=12"] });
    ok(ok1.ok);
    equal(ok1.experiments[0].schedule.steps, 12);
    const bad = `${dir}/bad.yaml`;
    await Deno.writeTextFile(bad, "name: [\n");
    const result = await readExperimentFile(bad);
    ok(!result.ok);
    equal(
      formatValidationErrors(bad, result.errors)[0].startsWith(`${bad}: YAML syntax error at line`),
      true,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("validateExperiment() never throws on damaged files and always explains a rejection", () => {
  let seed = 11;
  const random = (n: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
  const paths: (string | number)[][] = [];
  const collect = (value: unknown, path: (string | number)[]) => {
    paths.push(path);
    if (Array.isArray(value)) value.forEach((v, i) => collect(v, [...path, i]));
    else if (value && typeof value === "object") {
      for (const [k, v] of Object.entries(value)) collect(v, [...path, k]);
    }
  };
  const base = {
    ...quickstartRaw(),
    matrix: { "trainer.args.zero_stage": [1, 2] },
    compare: [{ a: "baseline", b: "split" }],
  };
  collect(base, []);
  const junk = [null, "x", -1, 0, 1.5, true, [], {}, [1, "a"], { a: 1 }, "${nope}", 1e300];
  for (let i = 0; i < 400; i++) {
    const raw = structuredClone(base) as Loose;
    for (let edits = 1 + random(3); edits > 0; edits--) {
      const path = paths[1 + random(paths.length - 1)];
      let parent: Loose = raw;
      for (const segment of path.slice(0, -1)) parent = parent?.[segment];
      if (parent && typeof parent === "object") {
        parent[path[path.length - 1]] = junk[random(junk.length)];
      }
    }
    const result = validateExperiment(raw);
    if (!result.ok) {
      ok(result.errors.length > 0);
      for (const error of result.errors) ok(error.message.length > 0, JSON.stringify(error));
    }
  }
});

Deno.test("validateExperiment() coerces --set by field type: env strings, free args text", () => {
  const result = validateExperiment(commandRaw(), {
    sets: ["trainer.env.TOKENIZERS_PARALLELISM=false", "trainer.args.ds=0185", "trainer.args.n=3"],
  });
  ok(result.ok, JSON.stringify(!result.ok && result.errors));
  const [exp] = result.experiments;
  equal(exp.trainer.env?.TOKENIZERS_PARALLELISM, "false");
  equal(exp.trainer.args?.ds, "0185");
  equal(exp.trainer.args?.n, 3);
});

Deno.test("validateExperiment(): ${args.x?} that no phase defines is valid; without ? it is not", () => {
  const raw = commandRaw() as Loose;
  raw.trainer.command.push("${args.hf_extra?}");
  raw.resume.universal.env = { EXTRA: "${args.hf_extra?}" };
  deepEqual(errorLines(raw), []);
  raw.trainer.command.push("${args.hf_extra}");
  deepEqual(errorLines(raw), [
    "trainer.command[7]: unknown placeholder ${args.hf_extra}: no argument hf_extra in the merged args",
  ]);
});
