/**
 * The `hf` preset: an unmodified Hugging Face `transformers.Trainer` script, run through the
 * launcher `python -m parity_hooks.hf SCRIPT [ARGS...]` (hooks/parity_hooks/hf.py), which adds
 * the trainer contract to every `Trainer` the script builds: full-precision metrics per
 * optimizer step, the stop and the save, `saved`/`loaded`/`snapshot` digests and the completion
 * marker. The experiment names the script and its own arguments; the preset adds what HF's
 * `TrainingArguments` need for each phase (`--max_steps ${steps}`, `--seed`, `--output_dir`,
 * `--resume_from_checkpoint`, `--deepspeed`). HF saves into `checkpoint-N`, the preset's tag.
 * Everything runs from `.venv-hooks/` (`deno task setup-hooks`), or the `venv` argument's.
 *
 * @module
 */

import { existsSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import type { PresetContext, PresetDescriptor } from "./preset.ts";
import { HOOKS_PACKAGE_DIR, hooksStampProblem } from "./hooks_stamp.ts";
import { PROJECT_DIR } from "./project_dir.ts";

/** The preset's default Python environment (`PARITY_HOOKS_VENV` overrides where it is). */
export const HOOKS_VENV: string = Deno.env.get("PARITY_HOOKS_VENV") ||
  join(PROJECT_DIR, ".venv-hooks");

/** The folder, under a phase's own, where HF's TensorBoard callback writes its event files. */
export const HF_TENSORBOARD_DIR = "tensorboard";

/** A repository-relative or absolute venv, or the preset's own. */
function hooksVenv(args: Readonly<Record<string, unknown>>): string {
  const venv = args.venv;
  if (typeof venv !== "string" || venv === "") return HOOKS_VENV;
  return isAbsolute(venv) ? venv : join(PROJECT_DIR, venv);
}

/** A path argument resolved against the experiment file's folder. */
function fileArg(ctx: PresetContext, key: string): string | undefined {
  const value = ctx.args[key];
  if (typeof value !== "string" || value === "") return undefined;
  return resolve(ctx.baseDir ?? ".", value);
}

function listArg(args: Readonly<Record<string, unknown>>, key: string): string[] {
  const value = args[key];
  return Array.isArray(value) ? value.map(String) : [];
}

function hfArgv(ctx: PresetContext): string[] {
  const { vars, args } = ctx;
  const venv = hooksVenv(args);
  const script = fileArg(ctx, "script") ?? "";
  const deepspeed = fileArg(ctx, "deepspeed");
  const worldSize = typeof args.world_size === "number" ? args.world_size : undefined;
  // A distributed run (DeepSpeed, or ranks asked for) starts under torchrun; one rank is enough
  // for DeepSpeed on a CPU, and torchrun gives it the process group it expects.
  const launch = deepspeed !== undefined || worldSize !== undefined
    ? [
      join(venv, "bin/torchrun"),
      "--standalone",
      "--nproc-per-node",
      String(worldSize ?? 1),
      "-m",
      "parity_hooks.hf",
    ]
    : [join(venv, "bin/python"), "-m", "parity_hooks.hf"];
  // The preset's flags come after the script's own: argparse keeps the last, so the schedule
  // always spans the full run and the phase writes into its own folder.
  const argv = [
    ...launch,
    script,
    ...listArg(args, "script_args"),
    "--max_steps",
    vars.steps,
    "--seed",
    vars.seed,
    "--output_dir",
    vars.save_at ? vars.checkpoint_dir : join(vars.run_dir, "output"),
  ];
  if (vars.resume_from) argv.push("--resume_from_checkpoint", vars.resume_from);
  if (deepspeed !== undefined) argv.push("--deepspeed", deepspeed);
  return argv.concat(listArg(args, "extra_args"));
}

/** The hf preset. */
export const HF_PRESET: PresetDescriptor = {
  name: "hf",
  launcher: true,
  description: "an unmodified Hugging Face transformers.Trainer script, through " +
    "`python -m parity_hooks.hf` (hooks/parity_hooks/hf.py)",
  args: {
    script: {
      flag: "SCRIPT",
      description: "the training script (relative to the experiment file's folder, or absolute)",
    },
    script_args: {
      flag: "ARGS",
      description: "the script's own arguments, a list, given to every phase",
    },
    extra_args: {
      flag: "ARGS",
      description: "more arguments after the preset's, a list (e.g. a resume's --ignore_data_skip)",
    },
    world_size: {
      flag: "--nproc-per-node",
      topology: true,
      description: "ranks torchrun starts (default: one process without torchrun)",
    },
    deepspeed: {
      flag: "--deepspeed",
      topology: true,
      description: "a DeepSpeed config JSON for HF's --deepspeed (relative to the experiment " +
        "file's folder); the phase then runs under torchrun",
    },
    venv: {
      flag: "--venv",
      description: "Python environment of the phase (repository-relative or absolute); default " +
        ".venv-hooks",
    },
  },
  runsInExperimentDir: true,
  requiredArgs: ["script"],
  faults: [],
  policies: [],
  tools: ["trainer"],
  executesPlans: false,
  checkpointMarker: "parity_checkpoint_complete.json",
  checkpointTag: "checkpoint-${save_at}",
  metricsFormat: "jsonl",
  otherMetricsFormats: ["tensorboard"],
  codeInputs: [HOOKS_PACKAGE_DIR],
  phaseCodeInputs: (ctx) =>
    [fileArg(ctx, "script"), fileArg(ctx, "deepspeed")].filter((p): p is string => p !== undefined),
  argv: hfArgv,
  env: ({ vars, args }): Record<string, string> => ({
    // HF's TensorBoard callback writes here (not under --output_dir, which is the split's
    // checkpoint root), so `metrics: {format: tensorboard}` finds it in the phase's folder.
    TENSORBOARD_LOGGING_DIR: join(vars.run_dir, HF_TENSORBOARD_DIR),
    // Under --deepspeed, DeepSpeed's JIT ops live in the phase's venv (setup-hooks builds them
    // there); the default ~/.cache/torch_extensions is shared by every venv, which then rebuild
    // each other's ops (minutes per phase).
    TORCH_EXTENSIONS_DIR: join(hooksVenv(args), "torch_extensions"),
    OMP_NUM_THREADS: "1",
  }),
  environmentProblem: (argSets = []) => {
    const venvs = [...new Set((argSets.length > 0 ? argSets : [{}]).map(hooksVenv))];
    const missing = venvs.filter((venv) => !existsSync(join(venv, "bin/python")));
    if (missing.length > 0) {
      return missing.includes(HOOKS_VENV)
        ? "the hf preset needs its Python environment: run `deno task setup-hooks` (creates " +
          ".venv-hooks/ with torch, transformers, accelerate, DeepSpeed and parity_hooks)"
        : `the experiment names a venv that does not exist: ${missing.join(", ")}`;
    }
    // The phases import parity_hooks from the venv: it must be the package the cache key hashes.
    return venvs.map((venv) => hooksStampProblem(venv)).find((p) => p !== undefined);
  },
};
