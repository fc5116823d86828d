import assert from "node:assert/strict";
import { REFERENCE_CLI } from "../../presets/mod.ts";
import type { PhaseSpec, SlurmExecutorSpec } from "../../types/phase_spec.ts";
import { resolvePlan } from "./resolve_plan.ts";
import { ExperimentObjectSchema } from "../schema.ts";

function experiment(extra: Record<string, unknown>) {
  return ExperimentObjectSchema.parse({
    name: "cmd",
    seed: 7,
    schedule: { steps: 40, save_at: 20 },
    resume: { native: { from: "native" }, universal: { from: "universal" } },
    ...extra,
  });
}

/** A phase's Slurm settings (fails when it runs locally). */
function slurmOf(spec: PhaseSpec): SlurmExecutorSpec {
  assert.equal(spec.executor.kind, "slurm", `${spec.name} runs on Slurm`);
  return spec.executor as SlurmExecutorSpec;
}

const placement = {
  version: 1,
  num_experts: 2,
  ep_size: 2,
  ranks: [{ rank: 0, experts: [0] }, { rank: 1, experts: [1] }],
};

const reference = experiment({
  trainer: {
    preset: "reference",
    args: { world_size: 4, ep_size: 2, fault: "drop-exp-avg-sq", placement },
  },
});

function specs(exp: ReturnType<typeof experiment>, runDir = "/r", env = {}) {
  const plan = resolvePlan(exp, { runDir, baseDir: "/exp", harnessEnv: env });
  return new Map(plan.phases.map((s) => [s.name, s]));
}

const flagOf = (spec: PhaseSpec) => (name: string) => spec.argv[spec.argv.indexOf(name) + 1];

Deno.test("resolvePlan() expands the reference preset for a split: schedule, save, topology, fault", () => {
  const split = specs(reference).get("split")!;
  assert.deepEqual(split.argv.slice(0, 6), [
    Deno.execPath(),
    "run",
    "-A",
    "--quiet",
    REFERENCE_CLI,
    "train",
  ]);
  const flag = flagOf(split);
  assert.equal(flag("--steps"), "40", "the schedule always spans every step");
  assert.equal(flag("--stop-at"), "20");
  assert.equal(flag("--save-at"), "20");
  assert.equal(flag("--checkpoint-dir"), "/r/phases/split/checkpoints");
  assert.equal(flag("--seed"), "7");
  assert.equal(flag("--world-size"), "4");
  assert.equal(flag("--placement"), JSON.stringify(placement), "objects become JSON");
  assert.equal(flag("--fault"), "drop-exp-avg-sq", "the fault reaches every reference process");
  assert.ok(!split.argv.includes("--resume-from"));
  assert.equal(split.env.PARITY_SAVE_AT, "20");
  assert.equal(split.env.PARITY_RESUME_FROM, "");
  assert.equal(split.cwd, "/r/phases/split", "a preset phase works in its own folder");
  assert.equal(split.paths.checkpointTag, "/r/phases/split/checkpoints/global_step20");
  assert.equal(split.checkpointMarker, "checkpoint_complete.json", "the preset's marker");
  assert.equal(split.metrics?.format, "jsonl");
  assert.equal(split.metrics?.path, "/r/phases/split/metrics.jsonl");
});

Deno.test("resolvePlan() gives a resume its checkpoint and kind, and the converter its folders", () => {
  const all = specs(reference);
  const resume = all.get("resume-universal")!;
  const flag = flagOf(resume);
  const universal = "/r/phases/convert/global_step20_universal";
  assert.equal(flag("--resume-from"), universal);
  assert.equal(flag("--resume-kind"), "universal");
  assert.ok(!resume.argv.includes("--save-at"), "only the split saves");
  assert.equal(resume.env.PARITY_RESUME_KIND, "universal");
  assert.equal(
    all.get("resume-native")!.env.PARITY_RESUME_FROM,
    all.get("split")!.paths.checkpointTag,
  );
  assert.deepEqual(all.get("convert")!.argv.slice(5), [
    "convert",
    "--input_folder",
    "/r/phases/split/checkpoints/global_step20",
    "--output_folder",
    universal,
    "--fault",
    "drop-exp-avg-sq",
  ]);
});

Deno.test("resolvePlan() interpolates a command template, its env and a relative cwd", () => {
  const exp = experiment({
    trainer: {
      command: [
        "python",
        "train.py",
        "--steps",
        "${steps}",
        "--out",
        "${metrics_file}",
        "--ws",
        "${args.world_size}",
      ],
      env: { HOME_DIR: "${env.HOME}", PHASE_NAME: "${phase}" },
      cwd: "work",
      args: { world_size: 8 },
      timeout: 30,
    },
    converter: { command: ["conv", "${native}", "${universal}"] },
  });
  const baseline = specs(exp, "/r", { HOME: "/home/me" }).get("baseline")!;
  assert.deepEqual(baseline.argv, [
    "python",
    "train.py",
    "--steps",
    "40",
    "--out",
    "/r/phases/baseline/metrics.jsonl",
    "--ws",
    "8",
  ]);
  assert.equal(baseline.env.HOME_DIR, "/home/me");
  assert.equal(baseline.env.PHASE_NAME, "baseline");
  assert.equal(baseline.env.PARITY_METRICS_FILE, "/r/phases/baseline/metrics.jsonl");
  assert.equal(baseline.cwd, "/exp/work", "relative to the experiment file's folder");
  assert.equal(baseline.timeoutS, 30);
  assert.equal(baseline.checkpointMarker, undefined);
  const { cwd: _cwd, ...bare } = exp.trainer as Record<string, unknown>;
  const plain = specs({ ...exp, trainer: bare } as typeof exp, "/r", { HOME: "/h" }).get(
    "baseline",
  )!;
  assert.equal(plain.cwd, "/exp", "without cwd: the experiment file's folder, where train.py is");
});

Deno.test("resolvePlan() abstracts the run folder in the cache's view of a command", () => {
  const a = specs(reference, "/results/x/run-a").get("resume-native")!;
  const b = specs(reference, "/elsewhere/x/run-b").get("resume-native")!;
  assert.notDeepEqual(a.argv, b.argv);
  assert.deepEqual(a.keyed, b.keyed);
  assert.ok(a.keyed.argv.includes("<resume_from>"));
  assert.ok(!JSON.stringify(a.keyed).includes("run-a"));
});

Deno.test("resolvePlan() chooses each resume's lane from declared topology, and says why", () => {
  const exp = experiment({
    trainer: { preset: "reference", args: { world_size: 4, ep_size: 2, placement } },
    resume: {
      native: { from: "native", args: { fault: "skip-rng-restore" } },
      reshard: { from: "universal", args: { world_size: 2 } },
      pinned: { from: "universal", args: { world_size: 2 }, lane: "exact" },
    },
  });
  const all = specs(exp);
  assert.deepEqual(all.get("resume-native")!.lane, {
    lane: "exact",
    reason: "same topology as the saved checkpoint",
  }, "a fault is no topology");
  assert.deepEqual(all.get("resume-reshard")!.lane, {
    lane: "drift",
    reason: "topology differs from the saved checkpoint (world_size 4 → 2)",
  });
  assert.deepEqual(all.get("resume-pinned")!.lane, {
    lane: "exact",
    reason: "declared in resume.pinned.lane",
  });
  assert.equal(all.get("split")!.topologyKey, all.get("resume-native")!.topologyKey);
});

Deno.test("resolvePlan() names the placement leaves that differ, so two reshards read apart", () => {
  const moved = {
    ...placement,
    ranks: [{ rank: 0, experts: [0, 3] }, { rank: 1, experts: [1, 2, 3] }],
  };
  const exp = experiment({
    trainer: { preset: "reference", args: { world_size: 4, ep_size: 2, placement } },
    resume: { reshard: { from: "universal", args: { world_size: 2, placement: moved } } },
  });
  const reason = specs(exp).get("resume-reshard")!.lane!.reason;
  assert.match(reason, /placement\.ranks\[0\]\.experts \[0\] → \[0,3\]/);
  assert.match(reason, /world_size 4 → 2\)$/);
  assert.doesNotMatch(reason, /\.\.\./, "no two cuts of the same JSON");
});

Deno.test("resolvePlan() keeps a command trainer's non-topology flags out of the lane", () => {
  const exp = experiment({
    trainer: { command: ["t", "${args.noise}"], args: { world_size: 2, noise: "0" } },
    converter: { command: ["c"] },
    resume: {
      noisy: { from: "native", args: { noise: "1" } },
      wider: { from: "native", args: { world_size: 4 } },
    },
  });
  const all = specs(exp);
  assert.equal(all.get("resume-noisy")!.lane?.lane, "exact", "noise is not declared topology");
  assert.equal(all.get("resume-wider")!.lane?.lane, "drift");
  const declared = specs(experiment({
    trainer: {
      command: ["t"],
      args: { world_size: 2, noise: "0" },
      topology_args: ["noise"],
    },
    resume: { noisy: { from: "native", args: { noise: "1" } } },
  }));
  assert.equal(declared.get("resume-noisy")!.lane?.lane, "drift", "declared topology");
});

Deno.test("resolvePlan() takes gradient accumulation from the schedule or the preset's argument", () => {
  const preset = specs(experiment({
    trainer: { preset: "reference", args: { grad_accum: 2 } },
    resume: { more: { from: "native", args: { grad_accum: 4 } } },
  }));
  assert.equal(preset.get("split")!.gradAccum, 2);
  assert.equal(preset.get("resume-more")!.gradAccum, 4, "resume overrides count");
  const declared = specs(experiment({
    schedule: { steps: 40, save_at: 20, grad_accum: 8 },
    trainer: { command: ["t"], args: { grad_accum: 2 } },
    resume: {},
  }));
  assert.equal(declared.get("split")!.gradAccum, 8, "a command's args are never guessed from");
});

Deno.test("resolvePlan() writes the planner's target without the fault and honours checkpoint_tag", () => {
  const exp = experiment({
    trainer: {
      preset: "reference",
      args: { world_size: 4, ep_size: 2, placement, fault: "replica-drift" },
      checkpoint_tag: "tag-${save_at}",
    },
    resume: {},
    plan_sync: { target: { world_size: 2, ep_size: 2 }, policies: ["balanced"] },
  });
  const all = specs(exp);
  const plan = all.get("plan-balanced")!;
  assert.equal(plan.target?.fault, undefined);
  assert.equal(plan.target?.world_size, 2);
  assert.equal(plan.paths.native, "/r/phases/split/checkpoints/tag-20");
  assert.equal(all.get("resume-plan-balanced")!.paths.plan, "/r/phases/plan-balanced/plan.json");
});

Deno.test("resolvePlan() gives a per-resume flag through an optional placeholder, dropped elsewhere", () => {
  const all = specs(experiment({
    trainer: { command: ["t", "--steps", "${steps}", "--noise=${args.noise?}"] },
    converter: { command: ["c"] },
    resume: { noisy: { from: "native", args: { noise: "0.1" } }, plain: { from: "native" } },
  }));
  assert.deepEqual(all.get("resume-noisy")!.argv.slice(-1), ["--noise=0.1"]);
  assert.ok(!all.get("baseline")!.argv.some((a) => a.startsWith("--noise")));
  assert.ok(!all.get("resume-plain")!.argv.some((a) => a.startsWith("--noise")));
  assert.equal(all.get("resume-noisy")!.lane?.lane, "exact", "a flag is no topology");
});

Deno.test("resolvePlan(): executor per experiment, overridden per program and per resume", () => {
  const exp = experiment({
    executor: { kind: "slurm", partition: "gpu", max_jobs: 6 },
    trainer: { command: ["python", "train.py"] },
    converter: { command: ["python", "convert.py"], executor: { kind: "local" } },
    resume: {
      native: { from: "native", executor: { kind: "slurm", nodes: 2, srun: true } },
      universal: { from: "universal" },
    },
  });
  const plan = resolvePlan(exp, { runDir: "/r", baseDir: "/exp", harnessEnv: {} });
  const by = new Map(plan.phases.map((s) => [s.name, s]));
  assert.deepEqual(by.get("baseline")!.executor, {
    kind: "slurm",
    partition: "gpu",
    extraArgs: [],
    pollS: 2,
    srun: false,
    maxJobs: 6,
  });
  assert.deepEqual(by.get("convert")!.executor, { kind: "local" });
  assert.equal(slurmOf(by.get("resume-native")!).nodes, 2);
  assert.equal(slurmOf(by.get("resume-native")!).srun, true);
  assert.equal(slurmOf(by.get("resume-universal")!).partition, "gpu");
  assert.equal(plan.parallel, 6); // Slurm phases queue up to max_jobs at once
  const local = resolvePlan(
    experiment({
      trainer: { command: ["python", "t.py"] },
      resume: { native: { from: "native" } },
    }),
    {
      runDir: "/r",
      baseDir: "/exp",
      harnessEnv: {},
    },
  );
  assert.ok(local.phases.every((s) => s.executor.kind === "local"));
  assert.equal(local.parallel, 1);
  const deepspeed = resolvePlan(
    experiment({
      executor: { kind: "slurm" },
      trainer: { preset: "deepspeed", args: { world_size: 2, ep_size: 2 } },
      resume: { native: { from: "native" } },
    }),
    { runDir: "/r", baseDir: "/exp", harnessEnv: {} },
  );
  assert.equal(slurmOf(deepspeed.phases[0]).srun, true); // its torchrun runs under srun
});

Deno.test("resolvePlan(): a deepspeed trainer on two Slurm nodes starts one torchrun per node", () => {
  const plan = resolvePlan(
    experiment({
      executor: { kind: "slurm", nodes: 2 },
      trainer: { preset: "deepspeed", args: { world_size: 4, autoep_size: 2 } },
      converter: { preset: "deepspeed" },
      resume: { universal: { from: "universal" } },
    }),
    { runDir: "/r", baseDir: "/exp", harnessEnv: {} },
  );
  const by = new Map(plan.phases.map((s) => [s.name, s]));
  const baseline = by.get("baseline")!;
  assert.equal(slurmOf(baseline).srun, true);
  // The preset's flags for 2 nodes (deepspeed_preset_test.ts has the whole line).
  assert.deepEqual(baseline.argv.slice(1, 5), ["--nnodes", "2", "--nproc-per-node", "2"]);
  // The converter is one process: under srun it would run once per node, into one folder.
  assert.equal(slurmOf(by.get("convert")!).srun, false);
  const local = resolvePlan(
    experiment({
      executor: { kind: "slurm", nodes: 2, srun: false },
      trainer: { preset: "deepspeed", args: { world_size: 4, autoep_size: 2 } },
      resume: { native: { from: "native" } },
    }),
    { runDir: "/r", baseDir: "/exp", harnessEnv: {} },
  );
  assert.equal(local.phases[0].argv[1], "--standalone"); // without srun: one launcher
});

Deno.test("resolvePlan() adds a calibration resume per LR error, last, with its LR scale", () => {
  const exp = experiment({
    trainer: { preset: "reference", args: { world_size: 4, ep_size: 2, placement } },
    resume: {
      native: { from: "native" },
      reshard: {
        from: "universal",
        args: { world_size: 2 },
        sensitivity: { lr_error: [1e-3, 2.5e-2] },
      },
    },
  });
  const plan = resolvePlan(exp, { runDir: "/r", baseDir: "/exp", harnessEnv: {} });
  const names = plan.phases.map((s) => s.name);
  assert.deepEqual(names.slice(-2), ["calibrate-reshard-lr1e-3", "calibrate-reshard-lr2.5e-2"]);
  const byName = new Map(plan.phases.map((s) => [s.name, s]));
  const resume = byName.get("resume-reshard")!;
  const calibration = byName.get("calibrate-reshard-lr1e-3")!;
  assert.equal(calibration.role, "calibrate");
  assert.deepEqual(calibration.calibration, { of: "resume-reshard", lr_error: 1e-3 });
  assert.deepEqual(calibration.consumes, resume.consumes);
  assert.deepEqual(calibration.lane, resume.lane);
  assert.equal(calibration.paths.resumeFrom, resume.paths.resumeFrom);
  assert.equal(flagOf(calibration)("--lr-scale-on-resume"), "1.001");
  assert.equal(calibration.env.PARITY_LR_SCALE, "1.001");
  // Every other phase runs at its own LR.
  assert.ok(!resume.argv.includes("--lr-scale-on-resume"));
  assert.equal(resume.env.PARITY_LR_SCALE, "");
});

Deno.test("resolvePlan(): ${output_dir} is each trainer phase's own folder; the split's is where resumes load", () => {
  const all = specs(experiment({
    trainer: {
      command: ["hf", "--output_dir=${output_dir}", "--resume_from_checkpoint=${resume_from?}"],
      checkpoint_tag: "checkpoint-${save_at}",
    },
    converter: { command: ["c", "${native}", "${universal}"] },
  }));
  const split = all.get("split")!;
  const native = all.get("resume-native")!;
  assert.deepEqual(split.argv, ["hf", "--output_dir=/r/phases/split/checkpoints"]);
  assert.equal(split.paths.outputDir, split.paths.checkpointDir, "the split saves in its own");
  assert.equal(split.paths.checkpointTag, "/r/phases/split/checkpoints/checkpoint-20");
  assert.deepEqual(native.argv, [
    "hf",
    "--output_dir=/r/phases/resume-native/checkpoints",
    "--resume_from_checkpoint=/r/phases/split/checkpoints/checkpoint-20",
  ]);
  assert.equal(native.paths.checkpointDir, split.paths.outputDir, "the resume loads the split's");
  assert.equal(all.get("baseline")!.argv[1], "--output_dir=/r/phases/baseline/checkpoints");
  assert.equal(all.get("convert")!.paths.outputDir, undefined, "trainer phases only");
  // In the cache's view the folder is a token, so a key does not depend on the run folder.
  assert.deepEqual(native.keyed.argv.slice(1), [
    "--output_dir=<output_dir>",
    "--resume_from_checkpoint=<resume_from>",
  ]);
});

Deno.test("resolvePlan(): ${python} runs a command program under args.venv, per resume too", () => {
  const all = specs(experiment({
    trainer: { command: ["${python}", "train.py", "--venv=${venv}"], args: { venv: ".venv-a" } },
    converter: { command: ["${python}", "convert.py"] },
    resume: {
      native: { from: "native" },
      other: { from: "native", args: { venv: "/opt/venv-b" } },
      universal: { from: "universal" },
    },
  }));
  assert.deepEqual(all.get("split")!.argv, [
    "/exp/.venv-a/bin/python",
    "train.py",
    "--venv=/exp/.venv-a",
  ]);
  assert.equal(all.get("resume-other")!.argv[0], "/opt/venv-b/bin/python");
  assert.equal(all.get("convert")!.argv[0], "/exp/.venv-a/bin/python", "trainer.args reach it");
  assert.equal(all.get("resume-other")!.lane?.lane, "exact", "a venv is no topology");
  const plain = specs(experiment({
    trainer: { command: ["${python}", "train.py", "--venv=${venv?}"] },
    converter: { command: ["c"] },
  }));
  assert.deepEqual(plain.get("baseline")!.argv, ["python3", "train.py"], "python3 without one");
});

Deno.test("resolvePlan(): with a device pool each phase takes its world size (a host tool 1 core)", () => {
  const trainer = {
    trainer: { preset: "reference", args: { world_size: 4 } },
    resume: {
      native: { from: "native" },
      narrow: { from: "universal", args: { world_size: 2 } },
    },
  };
  const ctx = { runDir: "/tmp/r", baseDir: "/tmp", harnessEnv: {} };
  const pool = { kind: "cpu", ids: [0, 1, 2, 3, 4, 5, 6, 7] };
  const plan = resolvePlan(experiment({ ...trainer, devices: pool }), ctx);
  assert.deepEqual(plan.devices, pool);
  const devices = Object.fromEntries(plan.phases.map((p) => [p.name, p.devices]));
  assert.equal(devices.baseline, 4);
  assert.equal(devices["resume-narrow"], 2);
  assert.equal(devices.convert, 1);
  // The pool does not change what a phase computes: its keyed command is the same.
  const without = resolvePlan(experiment(trainer), ctx);
  assert.deepEqual(plan.phases.map((p) => p.keyed), without.phases.map((p) => p.keyed));
  assert.equal(without.phases[0].devices, undefined);
});

Deno.test("resolvePlan(): several saves, one tag each; a resume loads its from_step's tag", () => {
  const exp = experiment({
    schedule: { steps: 10, save_at: [3, 6] },
    trainer: { preset: "reference" },
    resume: {
      early: { from: "native", from_step: 3 },
      last: { from: "native" },
      universal: { from: "universal", from_step: 3 },
    },
  });
  const all = specs(exp);
  const split = all.get("split")!;
  const root = "/r/phases/split/checkpoints";
  assert.equal(split.stopAt, 6);
  assert.deepEqual(split.saveSteps, [3, 6]);
  assert.equal(split.env.PARITY_SAVE_AT, "3,6");
  assert.equal(all.get("baseline")!.env.PARITY_DIGEST_AT, "3,6");
  assert.deepEqual(split.argv.slice(split.argv.indexOf("--save-at"), -2), ["--save-at", "3,6"]);
  assert.equal(split.paths.checkpointTag, `${root}/global_step6`);
  assert.deepEqual(split.paths.checkpointTags, [
    { step: 3, dir: `${root}/global_step3` },
    { step: 6, dir: `${root}/global_step6` },
  ]);
  assert.equal(all.get("resume-early")!.paths.resumeFrom, `${root}/global_step3`);
  assert.equal(all.get("resume-early")!.fromStep, 3);
  assert.equal(all.get("resume-last")!.paths.resumeFrom, `${root}/global_step6`);
  assert.equal(all.get("resume-last")!.fromStep, 6);
  // The converter converts the tag its resume needs.
  const convert = all.get("convert")!;
  assert.equal(convert.paths.native, `${root}/global_step3`);
  assert.equal(convert.paths.universal, "/r/phases/convert/global_step3_universal");
  assert.equal(all.get("resume-universal")!.paths.resumeFrom, convert.paths.universal);
  // A template names each save's folder.
  const hf = specs(experiment({
    schedule: { steps: 10, save_at: [3, 6] },
    trainer: { command: ["python3", "train.py", "${save_at}"], checkpoint_tag: "ck-${save_at}" },
    resume: { early: { from: "native", from_step: 3 } },
  }));
  assert.deepEqual(hf.get("split")!.argv, ["python3", "train.py", "3,6"]);
  assert.equal(hf.get("resume-early")!.paths.resumeFrom, `${root}/ck-3`);
});

Deno.test("resolvePlan(): checkpoint_format reads the split's tag and the universal folder back", () => {
  // A command trainer: the Python beside its program, relative to the experiment's folder.
  const command = specs(experiment({
    trainer: {
      command: ["../venvs/${args.venv}/bin/torchrun", "train.py"],
      args: { venv: "ds" },
      checkpoint_format: "deepspeed",
    },
    converter: { command: ["convert", "${native}", "${universal}"] },
  }));
  const byName = command;
  const split = byName.get("split")!;
  assert.equal(split.readBack?.argv[0], "/venvs/ds/bin/python");
  assert.match(split.readBack?.argv[1] ?? "", /adapters\/deepspeed\/checkpoint_files\.py$/);
  assert.equal(split.readBack?.argv[2], split.paths.checkpointTag);
  assert.equal(split.readBack?.out, `${split.paths.dir}/checkpoint_files.json`);
  // The reader's code joins the split's cache key.
  assert.ok(split.codeInputs.some((input) => input.endsWith("deepspeed/checkpoint_files.py")));
  assert.ok(split.codeInputs.some((input) => input.endsWith("deepspeed/zero_shards.py")));
  const convert = byName.get("convert")!;
  assert.equal(convert.readBack?.argv[2], convert.paths.universal);
  for (const name of ["baseline", "resume-native", "resume-universal"]) {
    assert.equal(byName.get(name)!.readBack, undefined, name);
  }
  // `${python}` (args.venv's Python, else python3 from PATH) is the reader's Python too.
  const templated = specs(experiment({
    trainer: {
      command: ["${python}", "train.py"],
      args: { venv: ".venv-a" },
      checkpoint_format: "deepspeed",
    },
    converter: { command: ["convert"] },
  }));
  assert.equal(templated.get("split")!.readBack?.argv[0], "/exp/.venv-a/bin/python");
  // Without the key nothing is read back; the deepspeed preset sets it, with its venv's Python.
  const plain = specs(experiment({
    trainer: { command: ["../venvs/ds/bin/torchrun", "train.py"] },
    converter: { command: ["convert"] },
  }));
  assert.equal(plain.get("split")!.readBack, undefined);
  const preset = specs(experiment({
    trainer: { preset: "deepspeed", args: { world_size: 2, venv: "/v/ds" } },
    converter: { preset: "deepspeed", args: { venv: "/v/conv" } },
  }));
  assert.equal(preset.get("split")!.readBack?.argv[0], "/v/ds/bin/python");
  assert.equal(preset.get("convert")!.readBack?.argv[0], "/v/conv/bin/python");
});

Deno.test("resolvePlan() of a fused split: the baseline saves and trains on, the resumes read it", () => {
  const fused = experiment({
    trainer: { preset: "reference", args: { world_size: 4, ep_size: 2, placement } },
    schedule: { steps: 40, save_at: 20, split: "fused" },
  });
  const s = specs(fused);
  assert.ok(!s.has("split"));
  const baseline = s.get("baseline")!;
  assert.equal(baseline.stopAt, 40);
  assert.equal(baseline.env.PARITY_SAVE_AT, "20");
  assert.equal(baseline.env.PARITY_DIGEST_AT, "20");
  assert.equal(baseline.paths.checkpointTag, "/r/phases/baseline/checkpoints/global_step20");
  const at = baseline.argv.indexOf("--save-at");
  assert.deepEqual(baseline.argv.slice(at, at + 4), [
    "--save-at",
    "20",
    "--checkpoint-dir",
    "/r/phases/baseline/checkpoints",
  ]);
  assert.equal(s.get("resume-native")!.env.PARITY_RESUME_FROM, baseline.paths.checkpointTag);
  assert.equal(s.get("convert")!.paths.native, baseline.paths.checkpointTag);
  // The cache sees the save: a fused baseline is another phase than a separate split's baseline.
  const separate = specs(experiment({
    trainer: { preset: "reference", args: { world_size: 4, ep_size: 2, placement } },
  }));
  assert.equal(separate.get("baseline")!.keyed.env.PARITY_SAVE_AT, "");
  assert.equal(baseline.keyed.env.PARITY_SAVE_AT, "20");
});
