import assert from "node:assert/strict";
import { join } from "node:path";
import { DEEPSPEED_PLAN_FAULTS, DEEPSPEED_PRESET } from "./deepspeed_preset.ts";
import { PROJECT_DIR } from "./project_dir.ts";

// The harness never imports the training script; these tests keep the descriptor in step with it.
const SCRIPT = Deno.readTextFileSync(join(PROJECT_DIR, "adapters/deepspeed/train_moe.py"));
const PLANNER = Deno.readTextFileSync(
  join(PROJECT_DIR, "adapters/deepspeed/deepspeed_planner.py"),
);

/** The keys of a Python dict literal `NAME = {...}` at the start of a line. */
function dictKeys(source: string, name: string): string[] {
  const table = source.match(new RegExp(`^${name} = \\{([\\s\\S]*?)^\\}`, "m"))?.[1] ?? "";
  return [...table.matchAll(/^\s+"([a-z_-]+)":/gm)].map((m) => m[1]);
}

Deno.test("deepspeed preset: planner faults and policies are the DeepSpeed planner driver's own", () => {
  assert.deepEqual([...DEEPSPEED_PLAN_FAULTS].sort(), dictKeys(PLANNER, "PLAN_FAULTS").sort());
  assert.deepEqual([...DEEPSPEED_PRESET.policies].sort(), dictKeys(PLANNER, "POLICIES").sort());
  assert.ok(PLANNER.includes(`"${DEEPSPEED_PRESET.args.plan_fault.flag}"`));
});

Deno.test("deepspeed preset: the planner runs DeepSpeed's driver, the executor runs on the plan", () => {
  const vars = {
    source_checkpoint: "/r/split/global_step50",
    target: "/r/t.json",
    policy: "first_holder",
    plan_out: "/r/plan.json",
    plan: "/r/plan.json",
    state_out: "/r/x/process_state.json",
  };
  const args = { world_size: 2, autoep_size: 1, plan_fault: "drop-segment" };
  const plan = DEEPSPEED_PRESET.argv({ tool: "planner", vars, args, elementSize: 2 });
  assert.ok(plan[0].endsWith(".venv-deepspeed/bin/python"), plan[0]);
  assert.ok(plan[1].endsWith("adapters/deepspeed/deepspeed_planner.py"));
  assert.equal(plan[plan.indexOf("--plan-fault") + 1], "drop-segment");
  assert.equal(plan[plan.indexOf("--element-size") + 1], "2");
  const exec = DEEPSPEED_PRESET.argv({ tool: "executor", vars, args, elementSize: 2 });
  assert.ok(exec[1].endsWith("adapters/deepspeed/plan_executor.py"));
  assert.deepEqual(exec.slice(2), [
    "--source-checkpoint",
    vars.source_checkpoint,
    "--plan",
    vars.plan,
    "--out",
    vars.state_out,
  ]);
  const train = DEEPSPEED_PRESET.argv({ tool: "trainer", vars: {}, args, elementSize: 2 });
  assert.ok(!train.includes("--plan-fault"), "the training script never sees a planner fault");
});

Deno.test("deepspeed preset: faults are the training script's own", () => {
  const table = SCRIPT.match(/^FAULTS = \{([\s\S]*?)^\}/m)?.[1] ?? "";
  const names = [...table.matchAll(/^\s+"([a-z-]+)":/gm)].map((m) => m[1])
    .filter((name) => name !== "none");
  assert.deepEqual([...DEEPSPEED_PRESET.faults].sort(), names.sort());
});

Deno.test("deepspeed preset: every script flag it passes is one train_moe.py defines", () => {
  for (const [key, arg] of Object.entries(DEEPSPEED_PRESET.args)) {
    // The launcher, and the venv (by path or by DeepSpeed release).
    if (key === "world_size" || key === "venv" || key === "deepspeed") continue;
    if (key === "plan_fault") continue; // the planner's (tested above)
    assert.ok(SCRIPT.includes(`"${arg.flag}"`), `${key}: train_moe.py has no ${arg.flag}`);
  }
});

/** The placeholder values of a trainer phase that neither saves nor resumes. */
const PHASE_VARS = {
  steps: "100",
  stop_at: "100",
  seed: "1",
  metrics_file: "/r/m.jsonl",
  run_dir: "/r",
  save_at: "",
  checkpoint_dir: "",
  resume_from: "",
  resume_kind: "",
};

Deno.test("deepspeed preset: a phase is torchrun + the script, with the run's flags", () => {
  const vars = { ...PHASE_VARS, resume_from: "/r/c/global_step50", resume_kind: "universal" };
  const argv = DEEPSPEED_PRESET.argv({
    tool: "trainer",
    vars,
    args: { world_size: 4, autoep_size: 2, zero_stage: 3 },
    elementSize: 4,
  });
  assert.ok(argv[0].endsWith("bin/torchrun"));
  assert.deepEqual(argv.slice(1, 4), ["--standalone", "--nproc-per-node", "4"]);
  assert.ok(argv[4].endsWith("adapters/deepspeed/train_moe.py"));
  const flag = (name: string) => argv[argv.indexOf(name) + 1];
  assert.equal(flag("--resume-kind"), "universal");
  assert.equal(flag("--autoep-size"), "2");
  assert.equal(flag("--zero-stage"), "3");
  assert.ok(!argv.includes("--world-size"), "world_size goes to the launcher only");
  assert.ok(!argv.includes("--save-at"));
  const twoNodes = DEEPSPEED_PRESET.argv({
    tool: "trainer",
    vars,
    args: { world_size: 4 },
    elementSize: 4,
    nodes: 2,
  });
  assert.deepEqual(twoNodes.slice(1, 7), [
    "--nnodes",
    "2",
    "--nproc-per-node",
    "2",
    "--rdzv-backend",
    "c10d",
  ]);
  assert.ok(!twoNodes.includes("--standalone"), "a standalone rendezvous is one node's");
  const convert = DEEPSPEED_PRESET.argv({
    tool: "converter",
    vars: { native: "/n", universal: "/u" },
    args: {},
    elementSize: 4,
  });
  assert.deepEqual(convert.slice(1, 7), [
    "-m",
    "deepspeed.checkpoint.ds_to_universal",
    "--input_folder",
    "/n",
    "--output_folder",
    "/u",
  ]);
});

Deno.test("deepspeed preset: args.venv picks the phase's environment, its stamp joins the key", () => {
  const vars = { ...PHASE_VARS, native: "/n", universal: "/u" };
  const ctx = (tool: "trainer" | "converter", args: Record<string, unknown>) => ({
    tool,
    vars,
    args,
    elementSize: 4,
  });
  const args = { venv: "/v2", prime_cpu_adam: true, model: "deepseek_v3" };
  const argv = DEEPSPEED_PRESET.argv(ctx("trainer", args));
  assert.equal(argv[0], "/v2/bin/torchrun");
  assert.ok(!argv.includes("--venv"), "the venv is not a script flag");
  assert.equal(argv[argv.indexOf("--prime-cpu-adam") + 1], "true");
  assert.equal(argv[argv.indexOf("--model") + 1], "deepseek_v3");
  assert.equal(DEEPSPEED_PRESET.argv(ctx("converter", args))[0], "/v2/bin/python");
  assert.deepEqual(DEEPSPEED_PRESET.phaseCodeInputs!(ctx("trainer", args)), ["/v2/.parity-stamp"]);
  assert.deepEqual(DEEPSPEED_PRESET.phaseCodeInputs!(ctx("trainer", {})), []);
  const relative = DEEPSPEED_PRESET.argv(ctx("trainer", { venv: ".venv-deepspeed-0.19.7" }));
  assert.equal(relative[0], join(PROJECT_DIR, ".venv-deepspeed-0.19.7/bin/torchrun"));
});

Deno.test("deepspeed preset: a venv an experiment names but the machine lacks is one sentence", () => {
  const problem = DEEPSPEED_PRESET.environmentProblem!([{}, { venv: "/no/such/venv" }]);
  assert.ok(problem, "a missing venv is an environment problem");
  // Either the preset's own venv is missing (a machine without the set-up) or the named one.
  assert.match(problem, /\/no\/such\/venv|setup-deepspeed/);
});

Deno.test("deepspeed preset: args.deepspeed picks that release's venv and is no script flag", () => {
  const argv = DEEPSPEED_PRESET.argv({
    tool: "trainer",
    vars: PHASE_VARS,
    args: { deepspeed: "0.18.4", venv: "elsewhere", model: "dense" },
  } as never);
  assert.ok(argv[0].endsWith(".venv-deepspeed-0.18.4/bin/torchrun"), argv[0]);
  assert.ok(!argv.includes("--deepspeed"));
  assert.ok(argv.includes("--model") && argv.includes("dense"));
  const env = DEEPSPEED_PRESET.env!({ args: { deepspeed: "0.18.4" } } as never);
  assert.ok(env.TORCH_EXTENSIONS_DIR.endsWith(".venv-deepspeed-0.18.4/torch_extensions"));
  assert.equal(DEEPSPEED_PRESET.releases?.package, "deepspeed");
  assert.deepEqual(DEEPSPEED_PRESET.releases?.setupArgv("0.18.4").slice(-2), [
    "--deepspeed",
    "0.18.4",
  ]);
});
