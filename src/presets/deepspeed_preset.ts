/**
 * The `deepspeed` preset: real DeepSpeed with AutoEP on CPU ranks (docs/deepspeed.md). The
 * trainer is `adapters/deepspeed/train_moe.py` launched by torchrun over gloo, the converter is
 * DeepSpeed's own `ds_to_universal`, the planner `adapters/deepspeed/deepspeed_planner.py` plans
 * a reshard of the checkpoint's recorded affine maps with DeepSpeed's own `plan_transfer`, and
 * the plan executor `adapters/deepspeed/plan_executor.py` runs each plan on the checkpoint's
 * bytes. Everything runs from the git-ignored `.venv-deepspeed/` that
 * `deno task setup-deepspeed` creates.
 *
 * @module
 */

import { existsSync } from "node:fs";
import { isAbsolute, join } from "node:path";
import { plannerFlags, type PresetContext, type PresetDescriptor, presetFlags } from "./preset.ts";
import { PROJECT_DIR } from "./project_dir.ts";
import { HOOKS_PACKAGE_DIR, hooksStampProblem } from "./hooks_stamp.ts";

/** The preset's Python environment (`PARITY_DEEPSPEED_VENV` overrides where it is). */
export const DEEPSPEED_VENV: string = Deno.env.get("PARITY_DEEPSPEED_VENV") ||
  join(PROJECT_DIR, ".venv-deepspeed");

const ADAPTER_DIR = join(PROJECT_DIR, "adapters/deepspeed");
const PYTHON = join(DEEPSPEED_VENV, "bin/python");

/**
 * The venv a phase runs under: `args.venv` (a path relative to the repository, or absolute) or
 * the preset's own. A resume or the converter may name another one, so that a checkpoint saved
 * by one DeepSpeed version is resumed or converted by another (`tools/setup_deepspeed.sh --venv`
 * builds a second pinned venv).
 */
function deepspeedVenv(args: Readonly<Record<string, unknown>>): string {
  // `deepspeed: X.Y.Z` names a release: its venv is the one `setup_deepspeed.sh --deepspeed` makes.
  if (typeof args.deepspeed === "string" && args.deepspeed !== "") {
    return releaseVenv(args.deepspeed);
  }
  const venv = args.venv;
  if (typeof venv !== "string" || venv === "") return DEEPSPEED_VENV;
  return isAbsolute(venv) ? venv : join(PROJECT_DIR, venv);
}

/** The venv of DeepSpeed release `version` (`tools/setup_deepspeed.sh --deepspeed <version>`). */
function releaseVenv(version: string): string {
  return join(PROJECT_DIR, `.venv-deepspeed-${version}`);
}

/** Arguments that choose the environment or reach only the planner, not flags of the script. */
const NOT_SCRIPT_FLAGS = ["world_size", "venv", "deepspeed", "plan_fault"];

/**
 * Resume faults of the training script: DeepSpeed's own load options, restores the script skips
 * or alters, and saves that record the wrong state (docs/deepspeed.md, "Faults"). A test keeps this list equal to the script's.
 */
const DEEPSPEED_FAULTS = [
  "no-optimizer-states",
  "no-lr-scheduler-states",
  "module-only",
  "skip-sampler-restore",
  "skip-rng-restore",
  "universal-without-load-universal",
  "cursor-saved-early",
  "rng-saved-after-draw",
  "param-group-lost",
  "expert-moment-one-param",
] as const;

/**
 * Planner bugs `deepspeed_planner.py --plan-fault` injects into one parameter, to show that the
 * verifier or the plan-execute check catches each (docs/plan-sync.md). A test keeps this list
 * equal to the driver's.
 */
export const DEEPSPEED_PLAN_FAULTS = [
  "none",
  "drop-segment",
  "wrong-holder",
  "shift-origin",
  "swap-source-experts",
] as const;

/**
 * Replica policies DeepSpeed's planner can run (`deepspeed_planner.py`): through 0.19.8's
 * per-request `replica_selector`; `balanced` splits regions, which a selector cannot express.
 */
const DEEPSPEED_POLICIES = ["first_holder", "highest_holder", "local_first_least_loaded"] as const;

function deepspeedArgv(ctx: PresetContext): string[] {
  const { vars, args } = ctx;
  const venv = deepspeedVenv(args);
  if (ctx.tool === "converter") {
    return [
      join(venv, "bin/python"),
      "-m",
      "deepspeed.checkpoint.ds_to_universal",
      "--input_folder",
      vars.native,
      "--output_folder",
      vars.universal,
      "--num_extract_workers",
      "1",
      "--num_merge_workers",
      "1",
    ];
  }
  if (ctx.tool === "planner") {
    const fault = args.plan_fault ? ["--plan-fault", String(args.plan_fault)] : [];
    return [
      join(venv, "bin/python"),
      join(ADAPTER_DIR, "deepspeed_planner.py"),
      ...plannerFlags(ctx),
      ...fault,
    ];
  }
  if (ctx.tool === "executor") {
    return [
      join(venv, "bin/python"),
      join(ADAPTER_DIR, "plan_executor.py"),
      "--source-checkpoint",
      vars.source_checkpoint,
      "--plan",
      vars.plan,
      "--out",
      vars.state_out,
    ];
  }
  const argv = [
    join(venv, "bin/torchrun"),
    ...launcherTopology(Number(args.world_size ?? 2), ctx.nodes ?? 1),
    join(ADAPTER_DIR, "train_moe.py"),
    "--steps",
    vars.steps,
    "--stop-at",
    vars.stop_at,
    "--seed",
    vars.seed,
    "--metrics-file",
    vars.metrics_file,
    "--out",
    vars.run_dir,
  ];
  if (vars.save_at) argv.push("--save-at", vars.save_at, "--checkpoint-dir", vars.checkpoint_dir);
  if (vars.digest_at) argv.push("--digest-at", vars.digest_at);
  if (vars.lr_scale) argv.push("--lr-scale-on-resume", vars.lr_scale);
  if (vars.resume_from) {
    argv.push("--resume-from", vars.resume_from, "--resume-kind", vars.resume_kind);
  }
  return argv.concat(presetFlags(DEEPSPEED_PRESET, args, NOT_SCRIPT_FLAGS));
}

/**
 * torchrun's topology flags: one node is `--standalone` (a rendezvous on the node itself); on
 * several nodes each launcher starts its share of the ranks and joins a c10d rendezvous whose
 * endpoint and id the Slurm job script exports (`PET_RDZV_ENDPOINT`, `PET_RDZV_ID`; see
 * src/executors/slurm_script.ts). Validation guarantees `nodes` divides `worldSize`.
 */
function launcherTopology(worldSize: number, nodes: number): string[] {
  if (nodes <= 1) return ["--standalone", "--nproc-per-node", String(worldSize)];
  return [
    "--nnodes",
    String(nodes),
    "--nproc-per-node",
    String(worldSize / nodes),
    "--rdzv-backend",
    "c10d",
  ];
}

/** The deepspeed preset. */
export const DEEPSPEED_PRESET: PresetDescriptor = {
  name: "deepspeed",
  launcher: true,
  description: "real DeepSpeed + AutoEP on CPU ranks over gloo (adapters/deepspeed/train_moe.py)",
  args: {
    world_size: {
      flag: "--nproc-per-node",
      topology: true,
      description: "ranks torchrun starts (data parallel × expert parallel)",
    },
    autoep_size: {
      flag: "--autoep-size",
      topology: true,
      description: "AutoEP expert-parallel size (divides experts and world_size)",
    },
    zero_stage: {
      flag: "--zero-stage",
      topology: true,
      values: [0, 1, 2, 3],
      description: "ZeRO stage",
    },
    precision: { flag: "--precision", values: ["fp32", "bf16"], description: "module precision" },
    grad_accum: { flag: "--grad-accum", description: "micro-batches per optimizer step" },
    global_batch: { flag: "--global-batch", description: "samples per optimizer step" },
    lr: { flag: "--lr", description: "peak learning rate of WarmupDecayLR" },
    sub_group_size: {
      flag: "--sub-group-size",
      description: "ZeRO-3 sub_group_size in elements (small: several optimizer sub-groups)",
    },
    warmup: { flag: "--warmup", description: "warm-up steps of WarmupDecayLR" },
    experts: { flag: "--experts", description: "experts per MoE layer" },
    layers: { flag: "--layers", description: "transformer layers" },
    hidden: { flag: "--hidden", description: "hidden size" },
    dropout: { flag: "--dropout", description: "dropout probability" },
    accelerator: {
      flag: "--accelerator",
      values: ["cpu", "cuda"],
      description: "cpu (gloo) or cuda (nccl, one GPU per rank)",
    },
    offload: {
      flag: "--offload",
      values: ["none", "cpu"],
      description: "ZeRO-3 offload of parameters and optimizer state to CPU memory",
    },
    ffn: { flag: "--ffn", description: "expert intermediate size" },
    top_k: { flag: "--top-k", description: "routed experts per token" },
    model: {
      flag: "--model",
      values: ["moe", "dense", "deepseek_v3", "mixtral"],
      description: "moe (hand-built, Mixtral-shaped), dense (the same with a dense MLP, no " +
        "AutoEP: any DeepSpeed from 0.16.0), deepseek_v3 (HF DeepseekV3ForCausalLM, " +
        "Moonlight's class) or mixtral (HF MixtralForCausalLM); tiny configs in models.py",
    },
    optimizer: {
      flag: "--optimizer",
      values: ["torch_adamw", "cpu_adam"],
      description:
        "torch_adamw (torch_adam: true) or cpu_adam (DeepSpeedCPUAdam; needs offload: cpu)",
    },
    prime_cpu_adam: {
      flag: "--prime-cpu-adam",
      values: [true, false],
      description:
        "workaround: replay the C++ CPU-Adam's beta powers after a load (docs/deepspeed.md)",
    },
    unshare_adam_step: {
      flag: "--unshare-adam-step",
      values: [true, false],
      description: "workaround: one Adam step tensor per sub-group after a ZeRO-3 universal load",
    },
    read_back_checkpoint: {
      flag: "--read-back-checkpoint",
      values: [true, false],
      description: "after the save, the script reads the checkpoint's files back itself (a " +
        "`files` event); the preset's harness-side read-back (checkpoint_format) does it anyway",
    },
    deepspeed: {
      flag: "--deepspeed",
      description:
        "a DeepSpeed release (X.Y.Z, from 0.16.0) whose venv .venv-deepspeed-X.Y.Z the " +
        "phase runs under (`bash tools/setup_deepspeed.sh --deepspeed X.Y.Z` builds it); wins over venv",
    },
    venv: {
      flag: "--venv",
      description: "Python environment of the phase (repository-relative or absolute); default " +
        ".venv-deepspeed — a resume or the converter under another DeepSpeed version",
    },
    seq_len: { flag: "--seq-len", description: "tokens per sample" },
    vocab: { flag: "--vocab", description: "vocabulary size" },
    fault: { flag: "--fault", description: "inject one named resume bug" },
    plan_fault: {
      flag: "--plan-fault",
      values: DEEPSPEED_PLAN_FAULTS,
      description: "inject one named planner bug into one parameter (planner only)",
    },
  },
  releases: {
    package: "deepspeed",
    // Before 0.16.0 torch.load lacks weights_only=False, which torch 2.13 needs for ZeRO files
    // (docs/deepspeed.md, "Known DeepSpeed bugs").
    oldest: "0.16.0",
    releaseArg: "deepspeed",
    setupArgv: (version) => [
      "bash",
      join(PROJECT_DIR, "tools/setup_deepspeed.sh"),
      "--deepspeed",
      version,
    ],
    listArgv: () => [PYTHON, "-m", "pip", "index", "versions", "deepspeed"],
  },
  faults: DEEPSPEED_FAULTS,
  policies: DEEPSPEED_POLICIES,
  tools: ["trainer", "converter", "planner", "executor"],
  executesPlans: false,
  checkpointMarker: "parity_checkpoint_complete.json",
  // The split's tag folder and the converter's universal folder are read back by
  // adapters/deepspeed/checkpoint_files.py in the phase's own venv.
  checkpointFormat: "deepspeed",
  readerPython: (args) => join(deepspeedVenv(args), "bin/python"),
  gradAccumArg: "grad_accum",
  metricsFormat: "jsonl",
  // The script imports parity_hooks.deepspeed, installed into the venv from ./hooks.
  codeInputs: [ADAPTER_DIR, HOOKS_PACKAGE_DIR, join(DEEPSPEED_VENV, ".parity-stamp")],
  phaseCodeInputs: ({ args }) =>
    deepspeedVenv(args) === DEEPSPEED_VENV ? [] : [join(deepspeedVenv(args), ".parity-stamp")],
  argv: deepspeedArgv,
  env: ({ args }): Record<string, string> => ({
    // DeepSpeed's JIT ops live in the venv, built once by tools/setup_deepspeed.sh (two venvs
    // sharing one folder would rebuild each other's ops).
    TORCH_EXTENSIONS_DIR: join(deepspeedVenv(args), "torch_extensions"),
    ...(args.accelerator === "cuda"
      // Deterministic cuBLAS, which torch.use_deterministic_algorithms(True) requires on CUDA.
      ? { DS_ACCELERATOR: "cuda", CUBLAS_WORKSPACE_CONFIG: ":4096:8" }
      : { DS_ACCELERATOR: "cpu", OMP_NUM_THREADS: "1" }),
  }),
  environmentProblem: (argSets = []) => {
    if (!existsSync(PYTHON)) {
      return "the deepspeed preset needs its Python environment: run `deno task setup-deepspeed` " +
        "(creates .venv-deepspeed/ with torch 2.13.0 and DeepSpeed 0.19.8)";
    }
    const venvs = [...new Set([DEEPSPEED_VENV, ...argSets.map(deepspeedVenv)])];
    const missing = venvs.filter((venv) => !existsSync(join(venv, "bin/python")));
    if (missing.length > 0) {
      return `the experiment names a DeepSpeed venv that does not exist: ${missing.join(", ")} ` +
        "(build it with `bash tools/setup_deepspeed.sh --deepspeed X.Y.Z`)";
    }
    // A venv holding an older parity_hooks would run other code than the cache key hashes.
    return venvs.map((venv) => hooksStampProblem(venv)).find((problem) => problem !== undefined);
  },
};
