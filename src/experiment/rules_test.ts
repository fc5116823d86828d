import { deepEqual, equal, ok } from "node:assert/strict";
import { commandRaw, quickstartRaw } from "../../test/_testing/experiment_files.ts";
import { programEntry } from "./plan/phase_graph.ts";
import { checkExperimentRules, phaseNames } from "./rules.ts";
import { type Experiment, ExperimentObjectSchema } from "./schema.ts";

/** Parses with the schema only, so each rule is tested on its own. */
function parse(raw: Record<string, unknown>): Experiment {
  return ExperimentObjectSchema.parse(raw);
}

function rulesOf(raw: Record<string, unknown>): string[] {
  return checkExperimentRules(parse(raw)).map((e) => `${e.path}: ${e.message}`);
}

// deno-lint-ignore no-explicit-any
type Loose = Record<string, any>;

/** A copy of `base()` changed by `mutate` (loosely typed: tests poke deep fields). */
function with_(mutate: (raw: Loose) => void, base = quickstartRaw): Record<string, unknown> {
  const raw = base() as Loose;
  mutate(raw);
  return raw;
}

Deno.test("checkExperimentRules() accepts the quickstart and an external command trainer", () => {
  deepEqual(rulesOf(quickstartRaw()), []);
  deepEqual(rulesOf(commandRaw()), []);
});

Deno.test("phaseNames() lists every phase the experiment produces, in run order", () => {
  const raw = with_((r) => {
    r.noise_floor = { repeats: 2 };
  });
  deepEqual(phaseNames(parse(raw)), [
    "baseline",
    "split",
    "resume-native",
    "convert",
    "resume-universal",
    "resume-reshard",
    "plan-first_holder",
    "plan-balanced",
    "resume-plan-first_holder",
    "resume-plan-balanced",
    "baseline-repeat-1",
    "baseline-repeat-2",
  ]);
  const nativeOnly = with_((r) => {
    r.resume = { native: { from: "native" } };
    r.plan_sync.resume = false;
  });
  // No universal resume: no convert phase, even with plan sync (the plan reads the native checkpoint).
  deepEqual(phaseNames(parse(nativeOnly)), [
    "baseline",
    "split",
    "resume-native",
    "plan-first_holder",
    "plan-balanced",
  ]);
});

Deno.test("checkExperimentRules() requires save_at < steps", () => {
  deepEqual(rulesOf(with_((r) => (r.schedule.save_at = 40))), [
    "schedule.save_at: expected less than schedule.steps (40), got 40",
  ]);
  deepEqual(rulesOf(with_((r) => (r.schedule.save_at = 39))), []);
});

Deno.test("checkExperimentRules() takes several saves: ascending, distinct, each below steps", () => {
  deepEqual(rulesOf(with_((r) => (r.schedule.save_at = [10, 20]))), []);
  deepEqual(rulesOf(with_((r) => (r.schedule.save_at = [20, 10, 10, 40]))), [
    "schedule.save_at[1]: expected ascending distinct steps, got 10 after 20",
    "schedule.save_at[2]: expected ascending distinct steps, got 10 after 10",
    "schedule.save_at[3]: expected less than schedule.steps (40), got 40",
  ]);
  // Several saves need the step in the tag template, or they all write one folder.
  deepEqual(
    rulesOf(with_((r) => {
      r.schedule = { steps: 10, save_at: [3, 6] };
      r.trainer.checkpoint_tag = "final";
    }, commandRaw)),
    [
      'trainer.checkpoint_tag: several saves need ${save_at} in the tag template ("final"), ' +
      "or every save writes the same folder",
    ],
  );
  equal(ExperimentObjectSchema.safeParse(with_((r) => (r.schedule.save_at = []))).success, false);
});

Deno.test("checkExperimentRules() wants from_step to be a save, one per convert phase", () => {
  const raw = (resume: Record<string, unknown>) =>
    with_((r) => {
      r.schedule.save_at = [10, 20];
      r.resume = resume;
      delete r.plan_sync;
    });
  deepEqual(rulesOf(raw({ early: { from: "native", from_step: 10 } })), []);
  deepEqual(rulesOf(raw({ early: { from: "native", from_step: 15 } })), [
    "resume.early.from_step: expected one of schedule.save_at (10, 20), got 15",
  ]);
  deepEqual(
    rulesOf(raw({ a: { from: "universal" }, b: { from: "universal", from_step: 10 } })),
    [
      "resume.b.from_step: universal resumes share one convert phase: resume.a converts " +
      "step 20, this one needs step 10 (default: the last save, 20)",
    ],
  );
  deepEqual(
    rulesOf(
      raw({ a: { from: "universal", from_step: 10 }, b: { from: "universal", from_step: 10 } }),
    ),
    [],
  );
});

Deno.test("checkExperimentRules() wants exactly one of preset and command", () => {
  deepEqual(rulesOf(with_((r) => (r.trainer.command = ["x"]))), [
    "trainer: set either preset or command, not both",
  ]);
  deepEqual(rulesOf(with_((r) => (r.converter = { timeout: 5 }), commandRaw)), [
    "converter: missing preset or command (e.g. preset: reference)",
  ]);
});

Deno.test("checkExperimentRules() checks reference arguments wherever they reach the reference trainer", () => {
  deepEqual(rulesOf(with_((r) => (r.trainer.args.zero_stag = 3))), [
    "trainer.args.zero_stag: unknown reference-preset argument (did you mean zero_stage?)",
  ]);
  deepEqual(rulesOf(with_((r) => (r.resume.reshard.args.micro = 3))), [
    "resume.reshard.args.micro: unknown reference-preset argument",
  ]);
  deepEqual(rulesOf(with_((r) => (r.plan_sync.target.foo = "x"))), [
    "plan_sync.target.foo: unknown reference-preset argument",
  ]);
  const [fault] = rulesOf(with_((r) => (r.trainer.args.fault = "skip-rng")));
  ok(fault.startsWith('trainer.args.fault: unknown fault "skip-rng"'), fault);
  deepEqual(rulesOf(with_((r) => (r.trainer.args.fault = "skip-rng-restore"))), []);
  // A command trainer may take any argument.
  deepEqual(rulesOf(with_((r) => (r.trainer.args.micro_batch = 8), commandRaw)), []);
  deepEqual(rulesOf(with_((r) => (r.trainer.args.zero_stage = 0))), [
    "trainer.args.zero_stage: expected one of 1, 2, 3 for the reference preset, got 0",
  ]);
});

Deno.test("checkExperimentRules() checks ep_size divides world_size in every merged context", () => {
  deepEqual(rulesOf(with_((r) => (r.trainer.args.ep_size = 3))), [
    "trainer.args.ep_size: ep_size 3 does not divide world_size 4",
  ]);
  deepEqual(rulesOf(with_((r) => (r.resume.reshard.args = { world_size: 3 }))), [
    "resume.reshard.args.world_size: ep_size 2 (inherited from trainer.args) does not divide world_size 3",
  ]);
  deepEqual(rulesOf(with_((r) => (r.plan_sync.target = { world_size: 6, ep_size: 4 }))), [
    "plan_sync.target.ep_size: ep_size 4 does not divide world_size 6",
  ]);
});

Deno.test("checkExperimentRules() checks placement descriptors against themselves and ep_size", () => {
  const placement = {
    version: 1,
    num_experts: 4,
    ep_size: 2,
    ranks: [{ rank: 0, experts: [0, 1, 2] }, { rank: 1, experts: [2, 3] }],
  };
  const alone = (r: Loose) => {
    r.resume = { native: { from: "native" } };
    delete r.plan_sync;
  };
  deepEqual(rulesOf(with_((r) => (alone(r), r.trainer.args.placement = placement))), []);
  deepEqual(
    rulesOf(with_((r) => {
      r.trainer.args.placement = placement;
      r.resume.reshard.args = { world_size: 2, ep_size: 1 };
    })),
    [
      "resume.reshard.args.ep_size: ep_size 1 disagrees with the placement inherited from trainer.args (ep_size 2); override placement too",
      "plan_sync.target.ep_size: ep_size 1 disagrees with the placement inherited from trainer.args (ep_size 2); override placement too",
    ],
  );
  deepEqual(
    rulesOf(with_((r) => {
      alone(r);
      r.trainer.args.placement = {
        ...placement,
        ep_size: 3,
        ranks: [{ rank: 0, experts: [0, 0, 7] }, { rank: 0, experts: [1] }],
      };
    })),
    [
      "trainer.args.placement.ep_size: expected 2 (ep_size), got 3",
      "trainer.args.placement.ranks: expected exactly 3 entries (ep_size), got 2",
      "trainer.args.placement.ranks[0].experts[1]: expert 0 appears twice on this rank",
      "trainer.args.placement.ranks[0].experts[2]: expected an expert id below num_experts 4, got 7",
      "trainer.args.placement.ranks[1].rank: rank 0 appears more than once",
      "trainer.args.placement.ranks: no rank holds experts 2, 3",
    ],
  );
});

Deno.test("checkExperimentRules() needs a converter and a planner for a command trainer", () => {
  const noConverter = with_((r) => delete r.converter, commandRaw);
  deepEqual(rulesOf(noConverter).map((line) => line.split(":")[0]), ["converter"]);
  equal(programEntry(parse(noConverter), "converter"), undefined);
  equal(programEntry(parse(quickstartRaw()), "converter")?.preset, "reference");
  const planSync = with_(
    (r) => (r.plan_sync = { target: { world_size: 2 }, policies: ["mine"] }),
    commandRaw,
  );
  deepEqual(rulesOf(planSync).map((line) => line.split(":")[0]), ["planner"]);
  equal(programEntry(parse(planSync), "planner"), undefined);
  // A command planner may name any policy.
  const ownPlanner = with_(
    (r) => (r.planner = { command: ["plan", "${policy}", "${plan_out}"] }),
    () => planSync,
  );
  deepEqual(rulesOf(ownPlanner), []);
});

Deno.test("checkExperimentRules() knows the reference planner's policies", () => {
  deepEqual(
    rulesOf(
      with_((
        r,
      ) => (r.plan_sync.policies = ["first_holder", "highest_holder", "local_first_least_loaded"])),
    ),
    [],
  );
  const [unknown, duplicate] = rulesOf(
    with_((r) => (r.plan_sync.policies = ["first_holdr", "balanced", "balanced"])),
  );
  ok(
    unknown.startsWith(
      'plan_sync.policies[0]: unknown policy "first_holdr" (did you mean first_holder?)',
    ),
    unknown,
  );
  equal(duplicate, "plan_sync.policies[2]: duplicate policy balanced");
});

Deno.test("checkExperimentRules() checks metrics settings and regexes", () => {
  const log = (metrics: Record<string, unknown>) =>
    rulesOf(with_((r) => (r.trainer.metrics = metrics), commandRaw));
  deepEqual(log({ format: "log", pattern: "step (?<step>\\d+) loss (?<loss>\\S+)" }), []);
  deepEqual(log({ format: "log", pattern: "(?<step>\\d+)" }), [
    "trainer.metrics.pattern: missing named group (?<loss>...)",
  ]);
  deepEqual(log({ format: "log", pattern: "x" }), [
    "trainer.metrics.pattern: missing named groups (?<step>...) and (?<loss>...)",
  ]);
  ok(log({ format: "log", pattern: "(?P<step>\\d+)" })[0].includes("Python's (?P<name>...)"));
  deepEqual(log({ format: "jsonl", pattern: "x" }), [
    "trainer.metrics.pattern: only used with format: log (format is jsonl)",
  ]);
  const samplesNeeded = [
    "trainer.metrics.samples_per_step: required: deepspeed-csv steps count samples " +
    "(set the global batch size, or step_unit: step)",
  ];
  deepEqual(log({ format: "deepspeed-csv", step_unit: "samples" }), samplesNeeded);
  // csv_monitor counts samples unless told otherwise.
  deepEqual(log({ format: "deepspeed-csv" }), samplesNeeded);
  deepEqual(log({ format: "deepspeed-csv", step_unit: "step" }), []);
  deepEqual(log({ format: "deepspeed-csv", samples_per_step: 128 }), []);
  // DeepSpeed's TensorBoard monitor logs against samples too, when told so.
  deepEqual(log({ format: "tensorboard", step_unit: "samples", samples_per_step: 8 }), []);
  deepEqual(log({ format: "tensorboard", step_unit: "samples" }), [
    "trainer.metrics.samples_per_step: required: tensorboard steps count samples " +
    "(set the global batch size, or step_unit: step)",
  ]);
  deepEqual(log({ format: "jsonl", step_unit: "samples" }), [
    "trainer.metrics.step_unit: samples is only used with format: deepspeed-csv or tensorboard",
  ]);
  deepEqual(
    rulesOf(with_((r) => (r.trainer.metrics = { format: "log", pattern: "(?<step>)(?<loss>)" }))),
    [
      'trainer.metrics.format: the reference preset writes jsonl, got "log"',
    ],
  );
  deepEqual(
    rulesOf(with_((r) => (r.trainer.retry = { attempts: 2, on: ["ok", "(bad"] }), commandRaw)),
    [
      "trainer.retry.on[1]: invalid regular expression: Unterminated group",
    ],
  );
  deepEqual(
    rulesOf(with_((r) => (r.trainer.code_inputs = ["!git rev-parse HEAD", "! "]), commandRaw)),
    [
      "trainer.code_inputs[1]: expected a command after '!'",
    ],
  );
});

Deno.test("checkExperimentRules() checks comparisons against the phases", () => {
  const compare = (entry: Record<string, unknown>) => rulesOf(with_((r) => (r.compare = [entry])));
  deepEqual(
    compare({ a: "baseline", b: "resume-plan-balanced", window: { from: 21, to: 40 } }),
    [],
  );
  const [unknown] = compare({ a: "baseline", b: "resume-nativ" });
  ok(
    unknown.startsWith(
      'compare[0].b: unknown phase "resume-nativ" (did you mean resume-native?); phases: baseline',
    ),
  );
  deepEqual(compare({ a: "split", b: "split" }), [
    "compare[0]: a and b are the same phase (split)",
  ]);
  deepEqual(compare({ a: "baseline", b: "resume-native", window: { from: 30, to: 41 } }), [
    "compare[0].window.to: expected at most schedule.steps (40), got 41",
  ]);
  deepEqual(compare({ a: "baseline", b: "resume-native", window: { from: 30, to: 25 } }), [
    "compare[0].window.from: expected at most window.to (25), got 30",
  ]);
  deepEqual(compare({ a: "baseline", b: "resume-native", rtol: 1e-3 }), [
    "compare[0].rtol: only used with lane: tolerance",
  ]);
  deepEqual(compare({ a: "baseline", b: "resume-native", lane: "tolerance", rtol: 1e-3 }), []);
});

Deno.test("checkExperimentRules() rejects a resume whose phase clashes with plan sync", () => {
  deepEqual(rulesOf(with_((r) => (r.resume["plan-balanced"] = { from: "native" }))), [
    "resume.plan-balanced: phase resume-plan-balanced clashes with a plan_sync phase; rename the resume",
  ]);
});

Deno.test("checkExperimentRules() checks placeholders with each program's scope", () => {
  deepEqual(rulesOf(with_((r) => (r.trainer.command[3] = "${stepz}"), commandRaw)), [
    "trainer.command[3]: unknown placeholder ${stepz} (did you mean ${steps}?)",
  ]);
  deepEqual(rulesOf(with_((r) => (r.trainer.env.X = "${plan_out}"), commandRaw)), [
    "trainer.env.X: unknown placeholder ${plan_out} here (only the planner has it)",
  ]);
  deepEqual(rulesOf(with_((r) => (r.trainer.cwd = "${rundir}"), commandRaw)), [
    "trainer.cwd: unknown placeholder ${rundir} (did you mean ${run_dir}?)",
  ]);
  deepEqual(
    rulesOf(
      with_((r) => (r.trainer.metrics = { path: "${run_dir}/m-${phase}.jsonl" }), commandRaw),
    ),
    [],
  );
  deepEqual(rulesOf(with_((r) => (r.trainer.metrics = { path: "${metric_file}" }), commandRaw)), [
    "trainer.metrics.path: unknown placeholder ${metric_file} (did you mean ${metrics_file}?)",
  ]);
  // The converter sees trainer.args merged with its own; the planner also plan_sync.target.
  deepEqual(rulesOf(with_((r) => r.converter.command.push("${args.world_size}"), commandRaw)), []);
  const planner = with_((r) => {
    r.plan_sync = { target: { world_size: 2, tp: 1 }, policies: ["mine"] };
    r.planner = {
      command: ["plan", "${args.tp}", "${args.world_size}", "${args.extra}"],
      args: { extra: 1 },
    };
  }, commandRaw);
  deepEqual(rulesOf(planner), []);
  // Resume env sees the resume's merged args.
  deepEqual(
    rulesOf(
      with_(
        (
          r,
        ) => (r.resume.universal = {
          from: "universal",
          args: { tp: 2 },
          env: { TP: "${args.tp}" },
        }),
        commandRaw,
      ),
    ),
    [],
  );
  deepEqual(rulesOf(with_((r) => (r.trainer.command.push("${args.tp}")), commandRaw)), [
    "trainer.command[6]: unknown placeholder ${args.tp}: no argument tp in the merged args",
  ]);
});

Deno.test("checkExperimentRules() declares gradient accumulation once and saves on its boundary", () => {
  deepEqual(
    rulesOf(with_((r) => {
      r.trainer.args.grad_accum = 2;
      r.schedule.grad_accum = 4;
    })),
    ["schedule.grad_accum: disagrees with trainer.args.grad_accum (2); set one of them"],
  );
  // The seed's pitfall: micro-step 50 with accumulation 16 is no optimizer-step boundary.
  deepEqual(
    rulesOf(with_((r) => {
      r.schedule = { steps: 96, save_at: 50, grad_accum: 16, step_unit: "micro_batch" };
    }, commandRaw)),
    [
      "schedule.save_at: micro-batch 50 is not on an optimizer-step boundary (gradient " +
      "accumulation 16: use a multiple of 16, e.g. 48)",
    ],
  );
  deepEqual(
    rulesOf(with_((r) => {
      r.schedule = { steps: 96, save_at: 48, grad_accum: 16, step_unit: "micro_batch" };
    }, commandRaw)),
    [],
  );
  // Counted in optimizer steps, any save step is a boundary.
  deepEqual(
    rulesOf(with_((r) => (r.schedule = { steps: 100, save_at: 50, grad_accum: 16 }), commandRaw)),
    [],
  );
});

Deno.test("checkExperimentRules() keeps topology_args and checkpoint_tag where they mean something", () => {
  deepEqual(rulesOf(with_((r) => (r.trainer.topology_args = ["world_size"]))), [
    "trainer.topology_args: the reference preset declares its own topology arguments",
  ]);
  deepEqual(rulesOf(with_((r) => (r.trainer.topology_args = ["world_size"]), commandRaw)), []);
  deepEqual(rulesOf(with_((r) => (r.trainer.checkpoint_tag = "../x"), commandRaw)), [
    "trainer.checkpoint_tag: expected a folder name (no '/', not starting with '.')",
  ]);
  deepEqual(rulesOf(with_((r) => (r.trainer.checkpoint_tag = "step_${save_at}"), commandRaw)), []);
});

Deno.test("checkExperimentRules(): checkpoint_format needs the trainer's program in a venv", () => {
  const withFormat = (program: string) =>
    with_((r) => {
      r.trainer.checkpoint_format = "deepspeed";
      r.trainer.command[0] = program;
    }, commandRaw);
  deepEqual(rulesOf(withFormat(".venv/bin/torchrun")), []);
  deepEqual(rulesOf(withFormat("python3")), [
    "trainer.command[0]: trainer.checkpoint_format reads the checkpoint with the Python beside " +
    "the trainer's program: expected a path into a venv's bin folder (e.g. .venv/bin/torchrun), " +
    'got "python3"',
  ]);
  deepEqual(
    rulesOf(
      with_((r) => (r.converter = { command: ["c"], checkpoint_format: "deepspeed" }), commandRaw),
    )
      .filter((e) => e.includes("checkpoint_format")),
    ["converter.checkpoint_format: only the trainer's checkpoints are read back"],
  );
});

/** A deepspeed-preset experiment with plan sync of a reshard to autoep_size 1. */
function deepspeedRaw(): Loose {
  return {
    name: "ds",
    schedule: { steps: 10, save_at: 5 },
    trainer: { preset: "deepspeed", args: { world_size: 2, autoep_size: 2 } },
    resume: { ep1: { from: "universal", args: { autoep_size: 1 } } },
    plan_sync: { target: { autoep_size: 1 }, policies: ["first_holder"], resume: false },
  };
}

Deno.test("plan_sync.execute adds an execute-plan phase per policy after the plans", () => {
  const raw = deepspeedRaw();
  raw.plan_sync.execute = true;
  raw.plan_sync.policies = ["first_holder", "highest_holder"];
  deepEqual(rulesOf(raw), []);
  deepEqual(phaseNames(parse(raw)).slice(-4), [
    "plan-first_holder",
    "plan-highest_holder",
    "execute-plan-first_holder",
    "execute-plan-highest_holder",
  ]);
  equal(programEntry(parse(raw), "executor")?.preset, "deepspeed");
});

Deno.test("plan_sync.execute needs a plan executor and a universal resume on the target", () => {
  const reference = with_((r) => {
    r.plan_sync.resume = false;
    r.plan_sync.execute = true;
  });
  ok(
    rulesOf(reference).includes(
      "plan_sync.execute: the reference preset has no plan executor; set plan_sync.execute: false",
    ),
  );
  const noReshard = deepspeedRaw();
  noReshard.plan_sync.execute = true;
  noReshard.resume = { native: { from: "native" } };
  deepEqual(rulesOf(noReshard).filter((e) => e.startsWith("plan_sync.execute")), [
    "plan_sync.execute: needs a universal resume on the plan's target topology to compare the " +
    'executed plan with: add resume.<name>: {from: universal, args: {"autoep_size":1}}',
  ]);
  const balanced = deepspeedRaw();
  balanced.plan_sync.policies = ["balanced"];
  ok(rulesOf(balanced).some((e) => e.startsWith("plan_sync.policies[0]: unknown policy")));
});

Deno.test("checkExperimentRules(): a launcher's node count divides world_size where it is set", () => {
  const deepspeed = (extra: Loose) => ({
    name: "ds",
    schedule: { steps: 20, save_at: 10 },
    trainer: { preset: "deepspeed", args: { world_size: 2, autoep_size: 2 } },
    converter: { preset: "deepspeed" },
    resume: { native: { from: "native" }, dp3: { from: "universal", args: { world_size: 3 } } },
    ...extra,
  });
  deepEqual(rulesOf(deepspeed({ resume: { native: { from: "native" } } })), []);
  deepEqual(
    rulesOf(
      deepspeed({ resume: { native: { from: "native" } }, executor: { kind: "slurm", nodes: 2 } }),
    ),
    [],
  );
  deepEqual(rulesOf(deepspeed({ executor: { kind: "slurm", nodes: 2 } })), [
    "executor.nodes: 2 nodes do not divide world_size 3 of resume dp3 (the launcher starts " +
    "world_size / nodes ranks on each node)",
  ]);
  const own: Loose = deepspeed({});
  own.resume.dp3.executor = { kind: "slurm", nodes: 2 };
  equal(rulesOf(own)[0].split(":")[0], "resume.dp3.executor.nodes");
  own.resume.dp3.executor.srun = false; // one launcher on the first node: any world size
  deepEqual(rulesOf(own), []);
});

Deno.test("checkExperimentRules(): a device pool holds every training phase's world size", () => {
  const deepspeed = (devices: Loose) => ({
    name: "ds",
    schedule: { steps: 20, save_at: 10 },
    trainer: { preset: "deepspeed", args: { world_size: 2, autoep_size: 2 } },
    converter: { preset: "deepspeed" },
    resume: { native: { from: "native" }, dp4: { from: "universal", args: { world_size: 4 } } },
    devices,
  });
  deepEqual(rulesOf(deepspeed({ kind: "cpu", ids: [0, 1, 2, 3] })), []);
  deepEqual(rulesOf(deepspeed({ kind: "cuda", ids: [0, 1] })), [
    "devices.ids: 2 device(s) cannot hold resume.dp4.args.world_size 4 (a phase takes one " +
    "device per rank)",
  ]);
  // The schema refuses a repeated id.
  ok(!ExperimentObjectSchema.safeParse(deepspeed({ kind: "cpu", ids: [0, 0] })).success);
});
