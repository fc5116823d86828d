import assert from "node:assert/strict";
import { join } from "node:path";
import { HF_PRESET, HOOKS_VENV } from "./hf_preset.ts";
import { topologyArgs } from "./preset.ts";

const vars = {
  steps: "10",
  seed: "7",
  save_at: "",
  checkpoint_dir: "",
  resume_from: "",
  run_dir: "/r/phases/baseline",
};
const args = {
  script: "train.py",
  script_args: ["--train_file", "data.txt", "--max_steps", "99"],
};

Deno.test("hf preset: the script and its own arguments, then the contract's flags (last wins)", () => {
  const argv = HF_PRESET.argv({ tool: "trainer", vars, args, elementSize: 4, baseDir: "/exp" });
  assert.deepEqual(argv, [
    join(HOOKS_VENV, "bin/python"),
    "-m",
    "parity_hooks.hf",
    "/exp/train.py",
    "--train_file",
    "data.txt",
    "--max_steps",
    "99",
    "--max_steps",
    "10",
    "--seed",
    "7",
    "--output_dir",
    "/r/phases/baseline/output",
  ]);
});

Deno.test("hf preset: the split saves into the checkpoint root; a resume loads the tag and adds its flags", () => {
  const split = HF_PRESET.argv({
    tool: "trainer",
    vars: { ...vars, save_at: "5", checkpoint_dir: "/r/phases/split/checkpoints" },
    args,
    elementSize: 4,
    baseDir: "/exp",
  });
  assert.deepEqual(split.slice(-2), ["--output_dir", "/r/phases/split/checkpoints"]);
  const resume = HF_PRESET.argv({
    tool: "trainer",
    vars: {
      ...vars,
      run_dir: "/r/phases/resume-x",
      resume_from: "/r/phases/split/checkpoints/checkpoint-5",
    },
    args: { ...args, extra_args: ["--ignore_data_skip", "true"], deepspeed: "ds.json" },
    elementSize: 4,
    baseDir: "/exp",
  });
  assert.deepEqual(resume.slice(0, 6), [
    join(HOOKS_VENV, "bin/torchrun"),
    "--standalone",
    "--nproc-per-node",
    "1",
    "-m",
    "parity_hooks.hf",
  ]);
  assert.deepEqual(resume.slice(-6), [
    "--resume_from_checkpoint",
    "/r/phases/split/checkpoints/checkpoint-5",
    "--deepspeed",
    "/exp/ds.json",
    "--ignore_data_skip",
    "true",
  ]);
  assert.equal(HF_PRESET.checkpointTag, "checkpoint-${save_at}");
  assert.deepEqual(topologyArgs(HF_PRESET), ["world_size", "deepspeed"]);
});

Deno.test("hf preset: its marker is the one parity_hooks writes", async () => {
  const events = await Deno.readTextFile(
    new URL("../../hooks/parity_hooks/_events.py", import.meta.url),
  );
  assert.match(events, new RegExp(`COMPLETE_MARKER = "${HF_PRESET.checkpointMarker}"`));
});

Deno.test("hf preset: DeepSpeed's JIT ops come from the phase's own venv, not a shared cache", () => {
  const ctx = (venvArgs: Record<string, unknown>) => ({
    tool: "trainer" as const,
    vars,
    args: { ...args, ...venvArgs },
    elementSize: 4,
    baseDir: "/exp",
  });
  const env = HF_PRESET.env!(ctx({}));
  assert.equal(env.TORCH_EXTENSIONS_DIR, join(HOOKS_VENV, "torch_extensions"));
  assert.equal(env.TENSORBOARD_LOGGING_DIR, "/r/phases/baseline/tensorboard");
  assert.equal(
    HF_PRESET.env!(ctx({ venv: "/tmp/venv-x" })).TORCH_EXTENSIONS_DIR,
    "/tmp/venv-x/torch_extensions",
  );
});
