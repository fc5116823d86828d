import assert from "node:assert/strict";
import { join } from "node:path";
import { DEEPSPEED_PRESET } from "./deepspeed_preset.ts";
import { PROJECT_DIR } from "./project_dir.ts";

// The harness never imports the training script; these tests keep the descriptor in step with it.
const SCRIPT = Deno.readTextFileSync(join(PROJECT_DIR, "adapters/deepspeed/train_moe.py"));

Deno.test("deepspeed preset: faults are the training script's own", () => {
  const table = SCRIPT.match(/^FAULTS = \{([\s\S]*?)^\}/m)?.[1] ?? "";
  const names = [...table.matchAll(/^\s+"([a-z-]+)":/gm)].map((m) => m[1])
    .filter((name) => name !== "none");
  assert.deepEqual([...DEEPSPEED_PRESET.faults].sort(), names.sort());
});

Deno.test("deepspeed preset: every script flag it passes is one train_moe.py defines", () => {
  for (const [key, arg] of Object.entries(DEEPSPEED_PRESET.args)) {
    if (key === "world_size" || key === "venv") continue; // the launcher and the venv
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
